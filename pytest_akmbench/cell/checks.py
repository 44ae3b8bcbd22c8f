"""The checks of a corpus: static checks (``validate``) and behaviour checks (``--bench-soundness``).

Static: every task.yaml valid, ids unique and equal to their path, stash fixtures and gold
refs present, a solution for every task, no workspace or shared workspace layer mentioning
akm (the control arm must not be told about it), and a heuristic warning when a stash asset contains a literal answer a
verifier pins. Behaviour: the untouched workspace fails its verifier, the solution passes it,
and the verifier says the same thing twice.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from ..agents.base import AgentRequest, AgentResult, Limits, OracleAgent
from ..corpus.hashes import layer_label
from ..corpus.tasks import Corpus, Task, load_lenient
from ..errors import CorpusError
from ..system.procs import ProcessTracker
from . import akm
from .akm import asset_exists
from .prompts import keywords, search_words
from .rundir import copy_stash, copy_workspace, large_workspace
from .verifiers import Verdict, verify

_AKM = re.compile(r"(?<![a-z0-9])akm(?![a-z0-9])", re.IGNORECASE)
_AKM_BYTES = re.compile(rb"(?<![a-z0-9])akm(?![a-z0-9])", re.IGNORECASE)
_CHUNK = 1 << 20
# Short strings are a format's own vocabulary (a heading, a file name) that an asset must
# teach; a long pinned string is more likely the task's answer itself.
_LITERAL = re.compile(r"""(?P<q>["'])(?P<text>[^"'\n]{24,})(?P=q)""")


def _asset_texts(stash: Path) -> list[tuple[Path, str]]:
    texts = []
    for path in sorted(stash.rglob("*")):
        if path.is_file() and path.name not in ("MANIFEST.json", ".stash.json"):
            texts.append((path, path.read_text(encoding="utf-8", errors="replace")))
    return texts


def _pinned_literals(task: Task) -> list[str]:
    sources = [task.task_dir / "verify.sh", *sorted((task.task_dir / "tests").glob("*.py"))]
    found = []
    for src in sources:
        if src.is_file():
            found += [m.group("text") for m in _LITERAL.finditer(src.read_text(encoding="utf-8", errors="replace"))]
    return sorted(set(found))


def static_problems(tasks_root: Path, stashes_root: Path) -> tuple[list[Task], list[str], list[str]]:
    """Check the corpus without running anything: (valid tasks, errors, warnings)."""
    warnings: list[str] = []
    try:
        corpus, by_path = load_lenient(tasks_root, stashes_root, bad_specs=True)
    except CorpusError as err:
        return [], [str(err)], []
    errors = list(by_path.values())
    tasks = list(corpus.tasks)
    checked: set[Path] = set()
    for task in tasks:
        path = task.yaml_path
        rel = path.parent.relative_to(tasks_root).as_posix()
        if rel != task.id:
            warnings.append(f"{path}: id: {task.id!r} differs from its directory {rel!r}")
        large = large_workspace(task)
        if large is not None:
            warnings.append(large)
        if not task.solution.is_file():
            errors.append(f"{path}: solution: no solution/solve.sh; add one so the oracle can prove the task solvable")
        if task.gold_ref and not asset_exists(stashes_root / task.stash, task.gold_ref):
            errors.append(f"{path}: gold_ref: {task.gold_ref!r} is not an asset of stash {task.stash!r}")
        for ref in task.expected_transfer_from:
            if not asset_exists(stashes_root / task.stash, ref):
                errors.append(f"{path}: expected_transfer_from: {ref!r} is not an asset of stash {task.stash!r}")
        for layer in (*task.layers, task.workspace):
            if layer in checked:
                continue  # a shared layer is reported once, not once per task
            checked.add(layer)
            for file in akm_mentions(layer):
                errors.append(f"{file}: workspace mentions akm; workspaces must be arm-neutral (the arm adds akm)")
        assets = _asset_texts(stashes_root / task.stash)
        literals = _pinned_literals(task)
        for asset, text in assets:
            if task.expected_match and re.search(task.expected_match, text):
                warnings.append(f"{path}: expected_match: the answer pattern matches stash asset {asset}")
            for literal in literals:
                if literal in text:
                    warnings.append(f"{path}: verifier pins {literal!r}, which stash asset {asset} contains verbatim")
    return sorted(tasks, key=lambda t: t.id), errors, warnings


def akm_mentions(layer: Path) -> list[Path]:
    """The files of a workspace layer whose name or text mentions akm, read in chunks (a large
    workspace file is never held whole)."""
    found = []
    for file in sorted(layer.rglob("*")) if layer.is_dir() else []:
        if not file.is_file() or file.is_symlink():
            continue
        if _AKM.search(file.name) is not None or _mentions(file):
            found.append(file)
    return found


def _mentions(file: Path) -> bool:
    # Each chunk is searched with one byte before it and three after, enough context for a
    # mention that starts in it (and only those count, so none is found twice or half).
    with open(file, "rb") as f:
        before, data = b"", f.read(_CHUNK)
        while data:
            after = f.read(_CHUNK)
            window = before[-1:] + data + after[:3]
            if any(len(before[-1:]) <= m.start() < len(window) - len(after[:3]) for m in _AKM_BYTES.finditer(window)):
                return True
            before, data = data, after
    return False


def contamination(tasks: list[Task], arms: tuple[str, ...]) -> list[str]:
    """The run's warning when a selected task's starting workspace mentions akm and the run has
    an arm without akm: that arm is told about akm, so its comparison with the akm arm is
    contaminated (``validate`` names every such file as an error; docs/corpus.md, "Layout")."""
    if all(arm == "akm" for arm in arms):
        return []
    seen: dict[Path, list[Path]] = {}
    named = []
    for task in tasks:
        files = [
            f"{layer_label(layer)}/{f.relative_to(layer).as_posix()}"
            for layer in (*task.layers, task.workspace)
            for f in seen.setdefault(layer, akm_mentions(layer))
        ]
        if files:
            named.append(f"{task.id} ({', '.join(files)})")
    if not named:
        return []
    more = f" and {len(named) - 10} more" if len(named) > 10 else ""
    return [
        f"arm neutrality: the starting workspace of {len(named)} selected task(s) mentions akm, so the control arm is "
        f"contaminated (told about akm): {'; '.join(named[:10])}{more}; python -m pytest_akmbench validate lists each file"
    ]


def run_warnings(corpus: Corpus, tasks: list[Task], arms: tuple[str, ...]) -> list[str]:
    """The corpus's warnings a run says before its first cell: the workflow specs it leaves out,
    workspaces too large to copy into every cell, workspaces that mention akm."""
    large = [line for task in tasks if (line := large_workspace(task)) is not None]
    return [*corpus.left_out, *large, *contamination(tasks, arms)]


def behaviour_problems(task: Task, work_root: Path, procs: ProcessTracker, timeout_s: float = 120.0) -> list[str]:
    """Run the verifier on the untouched workspace (must fail) and after solve.sh (must pass), twice each."""
    return behaviour_checks(task, work_root, procs, timeout_s)[1]


def behaviour_checks(
    task: Task, work_root: Path, procs: ProcessTracker, timeout_s: float = 120.0
) -> tuple[dict[str, bool | None], list[str]]:
    """``behaviour_problems`` with what each check found: ``nop_fails`` (the untouched workspace
    fails), ``solution_passes``, ``repeatable`` (both verifier runs agreed); None when a check
    could not be made."""
    problems: list[str] = []
    checks: dict[str, bool | None] = {"nop_fails": None, "solution_passes": None, "repeatable": None}
    for label, solve in (("untouched workspace", False), ("solution", True)):
        if solve and not task.solution.is_file():
            # akm-bench's corpora ship no solutions: nop and the verifier are still checked.
            problems.append(
                "no solution/solve.sh: that the task can be solved is not checked (nop and the verifier were)"
            )
            continue
        run_dir = Path(tempfile.mkdtemp(prefix="soundness-", dir=work_root))
        try:
            workspace = run_dir / "workspace"
            copy_workspace(task, workspace)
            (run_dir / "home").mkdir()
            env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(run_dir / "home"), "LANG": "C.UTF-8"}
            text = ""
            if solve:
                result = _solve(task, workspace, run_dir, env, procs, timeout_s)
                if result.error or result.budget:
                    problems.append(f"solution did not finish: {result.error or 'wall budget'}")
                    checks["solution_passes"] = False
                    continue
                text = result.final_text
            first, second = (
                _verify(task, workspace, run_dir, text, env, procs, timeout_s),
                _verify(task, workspace, run_dir, text, env, procs, timeout_s),
            )
            if not first.error:
                checks["solution_passes" if solve else "nop_fails"] = first.passed == solve
                checks["repeatable"] = checks["repeatable"] is not False and first.passed == second.passed
            problem = _judge(label, solve, first, second)
            if problem is not None:
                problems.append(problem)
        finally:
            procs.kill_all()
            shutil.rmtree(run_dir, ignore_errors=True)
    return checks, problems


def _solve(
    task: Task, workspace: Path, run_dir: Path, env: dict[str, str], procs: ProcessTracker, timeout_s: float
) -> AgentResult:
    """The task's solve.sh run on the workspace by the oracle agent."""
    return OracleAgent().run(
        AgentRequest(
            task=task,
            arm="noakm",
            seed=1,
            workspace=workspace,
            run_dir=run_dir,
            env=env,
            prompt="",
            prompt_version="",
            limits=Limits(wall_s=timeout_s),
            transcript=run_dir / "t",
            procs=procs,
        )
    )


def _verify(
    task: Task,
    workspace: Path,
    run_dir: Path,
    text: str,
    env: dict[str, str],
    procs: ProcessTracker,
    timeout_s: float,
) -> Verdict:
    scratch = Path(tempfile.mkdtemp(prefix="verify-", dir=run_dir))
    return verify(
        task, workspace=workspace, final_text=text, scratch=scratch, env=env, procs=procs, timeout_s=timeout_s
    )


def _judge(label: str, solve: bool, first: Verdict, second: Verdict) -> str | None:
    """What is wrong with two verdicts on one workspace: the verifier errs, disagrees with
    itself, or passes (fails) where it must fail (pass)."""
    if first.error:
        return f"verifier could not run on the {label}: {first.error}"
    if first.passed != second.passed:
        return f"verifier is not deterministic on the {label}: {_word(first)} then {_word(second)}"
    if first.passed != solve:
        return (
            "verifier passes on the untouched workspace: doing nothing would solve the task"
            if not solve
            else f"solution does not pass its verifier (exit {first.exit_code}): {first.tail.strip()[-300:]}"
        )
    return None


# The query forms soundness tries, in order: the words as separate arguments (akm-bench's prompt
# and the scripted policies), then the words as one quoted phrase (docs/akm.md, "Query forms").
QUERY_FORMS = ("words", "phrase")


def gold_search(
    task: Task, stashes_root: Path, info: akm.AkmInfo, work_root: Path, procs: ProcessTracker
) -> tuple[str | None, list[str]]:
    """With a real akm: which query form of the task's keywords lists its gold asset, ``words``
    (``akm search a b c``), else ``phrase`` (``akm search "a b c"``), else ``none`` with the
    problem; None when the task has no gold asset. Without a form that finds it, the akm arm
    could only reach the gold asset by guessing its ref."""
    if not task.gold_ref:
        return None, []
    run_dir = Path(tempfile.mkdtemp(prefix="soundness-", dir=work_root))
    try:
        stash = run_dir / "stash"
        copy_stash(task, stashes_root, stash)
        env = akm.cell_env(info, stash, akm.private_env(run_dir / "home"))
        akm.write_config(info, env)
        code, output, _ = procs.run([str(info.path), "index"], cwd=stash, env=env, timeout_s=300)
        if code != 0:
            return "none", [
                f"akm {info.version}: index of stash {task.stash!r} failed (exit {code}): {output.strip()[-200:]}"
            ]
        words = keywords(task)
        seen: list[str] = []
        for form, query in zip(QUERY_FORMS, (search_words(task), [words])):
            code, output, _ = procs.run([str(info.path), "search", *query], cwd=stash, env=env, timeout_s=120)
            hits = akm.search_refs(output) if code == 0 else None
            if hits is None:
                return "none", [f"akm {info.version}: search {words!r} failed (exit {code}): {output.strip()[-200:]}"]
            if any(akm.same_asset(ref, task.gold_ref) for ref in hits):
                return form, []
            seen.append(f"{form}: {', '.join(hits[:5]) or 'no hit'}")
        return "none", [
            f"akm {info.version}: searching akm_keywords {words!r} does not list gold_ref {task.gold_ref}, "
            f"neither as separate words nor as one phrase ({'; '.join(seen)}); "
            "change the keywords or the asset's description and tags"
        ]
    finally:
        procs.kill_all()
        shutil.rmtree(run_dir, ignore_errors=True)


def _word(verdict: Verdict) -> str:
    return "pass" if verdict.passed else "fail"
