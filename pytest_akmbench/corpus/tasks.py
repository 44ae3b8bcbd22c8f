"""Load an akm 0.7.0 task corpus: discovery, task.yaml validation, slices, selectors, hashes.

The schema, the slice rule and both hashes follow the reference bench exactly so that an
akm corpus loads unchanged and reports stay comparable; unlike the reference, a bad
task.yaml is an error naming the file and field, never a silent skip.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import CorpusError

DIFFICULTIES = ("easy", "medium", "hard")
VERIFIERS = ("script", "pytest", "regex")
SLICES = ("train", "eval")
MEMORY_ABILITIES = (
    "procedural_lookup",
    "multi_asset_composition",
    "temporal_update",
    "conflict_resolution",
    "abstention",
    "noisy_retrieval",
)
# Keys akm 0.7.0 parses but never reads; accepted so its corpora load unchanged.
_IGNORED_KEYS = ("metadata", "workflow_failure_category", "expected_workflows", "repeated_failure_group")
_KNOWN_KEYS = frozenset(
    (
        "id", "title", "domain", "difficulty", "stash", "verifier", "budget", "slice", "gold_ref",
        "stash_overlay", "expected_match", "memory_ability", "task_family", "workflow_focus",
        "expected_transfer_from", "abstention_case", "conflict_case", "stale_guidance_case",
        "akm_keywords", *_IGNORED_KEYS,
    )
)
_FIXTURE_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
BASE = "base"  # <tasks root>/base/ holds workspace layers shared by tasks, not a domain
# libyaml's safe loader parses a corpus of thousands of task.yaml files several times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Budget:
    """Per-task limits; ``None`` means "use the run-level default"."""

    tokens: int | None = None
    wall_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Task:
    """One validated task.yaml and where it lives."""

    id: str
    title: str
    domain: str
    difficulty: str
    stash: str
    verifier: str
    task_dir: Path
    yaml_text: str
    budget: Budget = Budget()
    declared_slice: str | None = None
    gold_ref: str | None = None
    stash_overlay: str | None = None
    expected_match: str | None = None
    memory_ability: str | None = None
    task_family: str | None = None
    workflow_focus: str | None = None
    expected_transfer_from: tuple[str, ...] = ()
    abstention_case: bool | None = None
    conflict_case: bool | None = None
    stale_guidance_case: bool | None = None
    akm_keywords: str | None = None
    layers: tuple[Path, ...] = ()  # shared workspace layers copied before the task's own

    @property
    def slice(self) -> str:
        """The declared slice, else the reference's SHA-1 parity rule."""
        return self.declared_slice or slice_of(self.id)

    @property
    def yaml_path(self) -> Path:
        return self.task_dir / "task.yaml"

    @property
    def workspace(self) -> Path:
        return self.task_dir / "workspace"

    @property
    def solution(self) -> Path:
        return self.task_dir / "solution" / "solve.sh"


@dataclass(frozen=True, slots=True)
class Corpus:
    """Every task under a tasks root, plus where its stash fixtures live."""

    tasks_root: Path
    stashes_root: Path
    tasks: tuple[Task, ...] = field(default=())

    def by_id(self) -> dict[str, Task]:
        return {t.id: t for t in self.tasks}


def slice_of(task_id: str) -> str:
    """docs/corpus.md, "Slices": first byte of SHA-1(id) even -> train, odd -> eval."""
    return "train" if hashlib.sha1(task_id.encode()).digest()[0] % 2 == 0 else "eval"


def find_task_files(tasks_root: Path) -> list[Path]:
    """Every task.yaml under ``tasks_root`` (not below a task dir, not in ``_example`` or the
    shared ``base/`` layers), sorted."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(tasks_root):
        if "task.yaml" in filenames and os.path.isfile(os.path.join(dirpath, "task.yaml")):
            dirnames[:] = []
            rel = Path(dirpath).relative_to(tasks_root)
            if "_example" not in rel.parts:
                found.append(Path(dirpath) / "task.yaml")
        else:
            top = dirpath == str(tasks_root)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (top and d == BASE))
    return sorted(found)


def workspace_layers(tasks_root: Path, domain: str) -> tuple[Path, ...]:
    """The shared layers under ``<tasks root>/base/`` that every task of ``domain`` starts from:
    ``base/workspace/``, then ``base/domains/<domain>/workspace/`` (later layers win, and the
    task's own ``workspace/`` is copied last)."""
    candidates = (tasks_root / BASE / "workspace", tasks_root / BASE / "domains" / domain / "workspace")
    return tuple(p for p in candidates if p.is_dir())


def load_corpus(tasks_root: Path, stashes_root: Path) -> Corpus:
    """Load and validate every task; the first bad task.yaml, duplicate id or missing fixture raises."""
    corpus, errors = load_lenient(tasks_root, stashes_root)
    if errors:
        raise CorpusError(next(iter(errors.values())))
    return corpus


def load_lenient(tasks_root: Path, stashes_root: Path) -> tuple[Corpus, dict[Path, str]]:
    """Load every valid task and collect the error of each invalid task.yaml, by path.

    The pytest layer turns each error into that file's collection error and ``validate``
    lists them all, so one bad task neither hides the others nor is silently skipped.
    """
    if not tasks_root.is_dir():
        raise CorpusError(f"{tasks_root}: tasks root is not a directory; pass --bench-corpus DIR")
    tasks: list[Task] = []
    errors: dict[Path, str] = {}
    seen: dict[str, Path] = {}
    for path in find_task_files(tasks_root):
        try:
            task = load_task(path)
            layers = workspace_layers(tasks_root, task.domain)
            if layers:
                task = dataclasses.replace(task, layers=layers)
            if task.id in seen:
                raise CorpusError(f"{path}: id: duplicate task id {task.id!r}, also in {seen[task.id]}")
            check_stash(task, stashes_root)
            check_paths(task)
        except CorpusError as err:
            errors[path] = str(err)
            continue
        seen[task.id] = path
        tasks.append(task)
    tasks.sort(key=lambda t: t.id)
    return Corpus(tasks_root=tasks_root, stashes_root=stashes_root, tasks=tuple(tasks)), errors


def check_stash(task: Task, stashes_root: Path) -> None:
    """A task's stash fixture must exist as ``<stashes_root>/<name>/MANIFEST.json``."""
    fixture = stashes_root / task.stash
    if not (fixture / "MANIFEST.json").is_file():
        raise CorpusError(
            f"{task.yaml_path}: stash: fixture {task.stash!r} not found "
            f"(no {fixture / 'MANIFEST.json'}); fix the name or pass --bench-stashes DIR"
        )
    if task.stash_overlay is not None:
        overlay = inside_task(task, task.stash_overlay, "stash_overlay")
        if not overlay.is_dir():
            raise CorpusError(f"{task.yaml_path}: stash_overlay: directory {task.stash_overlay!r} not found")


# Paths the harness copies or runs: each must lead to a place inside the task directory, so a
# task can neither pull another directory into the akm arm's stash or the workspace nor run
# (and fingerprint) a file it does not contain.
_TASK_PATHS = (("workspace", "workspace"), ("verify.sh", "verifier"), ("tests", "verifier"),
               ("solution/solve.sh", "solution"))


def inside_task(task: Task, rel: str, what: str) -> Path:
    """``task_dir / rel`` resolved; a CorpusError naming ``what`` if it leads outside the task."""
    root = task.task_dir.resolve()
    path = (task.task_dir / rel).resolve()
    if Path(rel).is_absolute() or not path.is_relative_to(root):
        raise CorpusError(f"{task.yaml_path}: {what}: {rel!r} leads outside the task; "
                          "it must name a path inside the task directory")
    return path


def check_paths(task: Task) -> None:
    """The workspace, verifier and solution, where present, must stay inside the task."""
    for rel, what in _TASK_PATHS:
        if os.path.lexists(task.task_dir / rel):
            inside_task(task, rel, f"{what} ({rel})")


def load_task(path: Path) -> Task:
    """Parse and validate one task.yaml."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CorpusError(f"{path}: cannot read: {err}") from err
    try:
        data = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader, C-accelerated when available
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise CorpusError(f"{path}: invalid YAML{where}: {problem}") from err
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a mapping of task fields, got {type(data).__name__}")
    return _task_from_mapping(path, data, text)


def _task_from_mapping(path: Path, data: dict[str, Any], text: str) -> Task:
    def bad(key: str, why: str) -> CorpusError:
        return CorpusError(f"{path}: {key}: {why}")

    unknown = sorted(str(k) for k in data if k not in _KNOWN_KEYS)
    if unknown:
        raise bad(unknown[0], "unknown field; remove it or check its spelling")

    def required_str(key: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise bad(key, "required non-empty string")
        return value

    def optional_str(key: str) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise bad(key, f"must be a string, got {type(value).__name__}")
        return value or None

    def one_of(key: str, allowed: tuple[str, ...], value: str | None) -> str | None:
        if value is not None and value not in allowed:
            raise bad(key, f"{value!r} is not one of {', '.join(allowed)}")
        return value

    def optional_bool(key: str) -> bool | None:
        value = data.get(key)
        if value is not None and not isinstance(value, bool):
            raise bad(key, f"must be true or false, got {value!r}")
        return value

    task_id = required_str("id")
    stash = required_str("stash")
    if not _FIXTURE_NAME.match(stash):
        raise bad("stash", f"{stash!r} is not a fixture name (letters, digits, . _ -)")
    transfer = data.get("expected_transfer_from")
    if transfer is not None and (not isinstance(transfer, list) or not all(isinstance(x, str) for x in transfer)):
        raise bad("expected_transfer_from", "must be a list of asset refs")
    verifier = one_of("verifier", VERIFIERS, required_str("verifier"))
    expected = optional_str("expected_match")
    if expected is not None:
        try:
            re.compile(expected)
        except re.error as err:
            raise bad("expected_match", f"invalid regular expression: {err}") from err
    if verifier == "regex" and expected is None:
        raise bad("expected_match", "required for verifier: regex")
    return Task(
        id=task_id,
        title=required_str("title"),
        domain=required_str("domain"),
        difficulty=one_of("difficulty", DIFFICULTIES, required_str("difficulty")) or "",
        stash=stash,
        verifier=verifier or "",
        task_dir=path.parent,
        yaml_text=text,
        budget=_budget(path, data.get("budget")),
        declared_slice=one_of("slice", SLICES, optional_str("slice")),
        gold_ref=optional_str("gold_ref"),
        stash_overlay=optional_str("stash_overlay"),
        expected_match=expected,
        memory_ability=one_of("memory_ability", MEMORY_ABILITIES, optional_str("memory_ability")),
        task_family=optional_str("task_family"),
        workflow_focus=optional_str("workflow_focus"),
        expected_transfer_from=tuple(x for x in (transfer or ()) if x),
        abstention_case=optional_bool("abstention_case"),
        conflict_case=optional_bool("conflict_case"),
        stale_guidance_case=optional_bool("stale_guidance_case"),
        akm_keywords=optional_str("akm_keywords"),
    )


def _budget(path: Path, raw: object) -> Budget:
    if raw is None:
        return Budget()
    if not isinstance(raw, dict):
        raise CorpusError(f"{path}: budget: must be a mapping with tokens and wallMs")
    unknown = sorted(str(k) for k in raw if k not in ("tokens", "wallMs"))
    if unknown:
        raise CorpusError(f"{path}: budget.{unknown[0]}: unknown field; use tokens and wallMs")
    values: dict[str, int | None] = {}
    for key in ("tokens", "wallMs"):
        value = raw.get(key)
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise CorpusError(f"{path}: budget.{key}: {value!r} is not a number") from None
        if value is None:
            values[key] = None
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
            raise CorpusError(f"{path}: budget.{key}: must be a positive number, got {value!r}")
        else:
            values[key] = int(value)
    return Budget(tokens=values["tokens"], wall_ms=values["wallMs"])


# ---------------------------------------------------------------- selection


def select(corpus: Corpus, selector: str | list[str] | None) -> tuple[list[Task], str]:
    """Resolve a run-config ``tasks`` selector (docs/corpus.md, "Selectors") to tasks and a slice label.

    Unlike the reference, a duplicated id in a list is an error instead of a silent rerun.
    """
    tasks = list(corpus.tasks)
    if selector is None or selector == "all":
        return tasks, "all"
    if isinstance(selector, str):
        if selector in SLICES:
            return [t for t in tasks if t.slice == selector], selector
        if "/" in selector:
            return [_by_id(corpus, selector)], "all"
        chosen = [t for t in tasks if t.domain == selector]
        if not chosen:
            domains = ", ".join(sorted({t.domain for t in tasks})) or "none"
            raise CorpusError(f"tasks: no task with id or domain {selector!r}; domains: {domains}")
        return chosen, "all"
    if not selector:
        raise CorpusError("tasks: empty list selects no task")
    dupes = sorted({s for s in selector if selector.count(s) > 1})
    if dupes:
        raise CorpusError(f"tasks: {dupes[0]!r} is listed twice")
    return [_by_id(corpus, s) for s in selector], "all"


def _by_id(corpus: Corpus, task_id: str) -> Task:
    for task in corpus.tasks:
        if task.id == task_id:
            return task
    raise CorpusError(f"tasks: task not found: {task_id!r}")


def select_with_override(
    corpus: Corpus, selector: str | list[str] | None, override: str | list[str] | None
) -> tuple[list[Task], str]:
    """A config's selector, then a ``--bench-tasks`` override applied inside its selection."""
    chosen, slice_label = select(corpus, selector)
    if override is not None:
        narrowed, _ = select(Corpus(corpus.tasks_root, corpus.stashes_root, tuple(chosen)), override)
        chosen = restrict(chosen, [t.id for t in narrowed])
    return chosen, slice_label


def restrict(tasks: list[Task], ids: list[str]) -> list[Task]:
    """Apply a ``--bench-tasks a,b`` override: keep the selection's order, reject strays."""
    have = {t.id for t in tasks}
    missing = [i for i in ids if i not in have]
    if missing:
        raise CorpusError(f"--bench-tasks: not in the selection: {', '.join(missing)}")
    wanted = set(ids)
    return [t for t in tasks if t.id in wanted]


# ---------------------------------------------------------------- hashes


def task_corpus_hash(tasks: list[Task]) -> str:
    """docs/corpus.md, "Hashes": SHA-256 over sorted ids, each ``id NUL task.yaml-text NUL``."""
    h = hashlib.sha256()
    for task in sorted(tasks, key=lambda t: _code_units(t.id)):
        h.update(task.id.encode())
        h.update(b"\0")
        h.update(task.yaml_text.encode())
        h.update(b"\0")
    return h.hexdigest()


def fixture_hash(fixture_dir: Path) -> str:
    """docs/corpus.md, "Hashes": SHA-256 over sorted relative paths of regular files, ``path NUL bytes NUL``."""
    files: list[str] = []
    for dirpath, dirnames, filenames in os.walk(fixture_dir):
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            full = os.path.join(dirpath, name)
            if os.path.isfile(full) and not os.path.islink(full):
                files.append(os.path.relpath(full, fixture_dir))
    h = hashlib.sha256()
    for rel in sorted(files, key=_code_units):
        h.update(rel.encode())
        h.update(b"\0")
        h.update((fixture_dir / rel).read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def fixtures_stamp(tasks: list[Task], stashes_root: Path) -> tuple[dict[str, str], str]:
    """``fixtures`` {name: hash} for the selection's distinct stashes and the combined hash."""
    fixtures = {name: fixture_hash(stashes_root / name) for name in sorted({t.stash for t in tasks}, key=_code_units)}
    h = hashlib.sha256()
    for name, digest in fixtures.items():
        h.update(name.encode())
        h.update(b"\0")
        h.update(digest.encode())
        h.update(b"\0")
    return fixtures, h.hexdigest()


def _code_units(text: str) -> list[int]:
    # JS sorts strings by UTF-16 code unit; only differs from Python for astral characters.
    units = text.encode("utf-16-be")
    return [int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2)]
