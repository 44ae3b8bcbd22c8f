"""Build small corpora on disk for tests: every task a real directory a real verifier runs on."""

from __future__ import annotations

from pathlib import Path

import yaml

SCRIPT_VERIFY = 'grep -qx "hello" out.txt\n'
SCRIPT_SOLVE = "echo hello > out.txt\n"


def write_task(
    tasks_root: Path,
    task_id: str,
    *,
    verifier: str = "script",
    stash: str = "st",
    verify: str | None = None,
    solve: str | None = SCRIPT_SOLVE,
    tests: str | None = None,
    extra: dict | None = None,
    raw_yaml: str | None = None,
    workspace: dict[str, str] | None = None,
) -> Path:
    """Write ``tasks_root/<task_id>/`` with task.yaml, workspace, verifier and solution."""
    domain = task_id.split("/")[0]
    task_dir = tasks_root / task_id
    (task_dir / "workspace").mkdir(parents=True, exist_ok=True)
    for name, text in (workspace or {"README.md": f"Task {task_id}: write hello to out.txt\n"}).items():
        (task_dir / "workspace" / name).write_text(text)
    data = {
        "id": task_id,
        "title": f"Title of {task_id}",
        "domain": domain,
        "difficulty": "easy",
        "stash": stash,
        "verifier": verifier,
        "budget": {"tokens": 1000, "wallMs": 20000},
    }
    data.update(extra or {})
    (task_dir / "task.yaml").write_text(raw_yaml if raw_yaml is not None else yaml.safe_dump(data, sort_keys=False))
    if verifier == "script":
        (task_dir / "verify.sh").write_text(verify if verify is not None else SCRIPT_VERIFY)
    if verifier == "pytest":
        (task_dir / "tests").mkdir(exist_ok=True)
        (task_dir / "tests" / "test_out.py").write_text(
            tests
            or 'from pathlib import Path\n\n\ndef test_out():\n    assert Path("out.txt").read_text().strip() == "hello"\n'
        )
    if solve is not None:
        (task_dir / "solution").mkdir(exist_ok=True)
        (task_dir / "solution" / "solve.sh").write_text(solve)
    return task_dir


def write_stash(stashes_root: Path, name: str = "st", assets: dict[str, str] | None = None) -> Path:
    """A fixture stash in akm layout with a MANIFEST.json."""
    root = stashes_root / name
    (root / "skills" / "howto").mkdir(parents=True, exist_ok=True)
    (root / "MANIFEST.json").write_text(f'{{"name": "{name}", "assets": {{"skill": 1}}}}\n')
    (root / "skills" / "howto" / "SKILL.md").write_text("---\nname: howto\n---\nWrite greetings in lower case.\n")
    for rel, text in (assets or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def standard_corpus(base: Path) -> tuple[Path, Path]:
    """Two domains, three tasks, all three verifier kinds, one stash: (tasks root, stashes root)."""
    tasks, stashes = base / "corpus" / "tasks", base / "corpus" / "stashes"
    write_stash(stashes)
    write_task(tasks, "alpha/script-task")
    write_task(tasks, "alpha/pytest-task", verifier="pytest")
    write_task(
        tasks,
        "beta/regex-task",
        verifier="regex",
        solve="echo 'the answer is 42'\n",
        extra={"expected_match": r"answer is 4\d"},
    )
    return tasks, stashes
