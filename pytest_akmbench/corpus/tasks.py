"""Load an akm 0.7.0 task corpus: discovery, task.yaml validation, slices, selectors (the
fields are read by :mod:`fields`, the hashes are :mod:`hashes`).

The schema, the slice rule and both hashes follow the reference bench exactly so that an
akm corpus loads unchanged and reports stay comparable; unlike the reference, a bad
task.yaml is an error naming the file and field, never a silent skip.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import CorpusError
from .fields import TaskFields

# The hashes live in hashes.py; the report's envelope still reads them from here.
from .hashes import fixture_hash as fixture_hash
from .hashes import fixtures_stamp as fixtures_stamp
from .hashes import task_corpus_hash as task_corpus_hash

# Selection lives in selection.py; callers still import it from here.
from .selection import restrict as restrict
from .selection import select as select
from .selection import select_with_override as select_with_override
from .strict import load_yaml
from .workflows import WorkflowSpec, for_task, load_specs_lenient, workflows_dir

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
_IGNORED_KEYS = ("metadata", "repeated_failure_group")
_KNOWN_KEYS = frozenset(
    (
        "id",
        "title",
        "domain",
        "difficulty",
        "stash",
        "verifier",
        "budget",
        "slice",
        "gold_ref",
        "stash_overlay",
        "expected_match",
        "memory_ability",
        "task_family",
        "workflow_focus",
        "expected_workflows",
        "workflow_failure_category",
        "expected_transfer_from",
        "abstention_case",
        "conflict_case",
        "stale_guidance_case",
        "akm_keywords",
        *_IGNORED_KEYS,
    )
)
_FIXTURE_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
BASE = "base"  # base/ holds workspace layers shared by tasks, not a domain


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
    expected_workflows: tuple[str, ...] = ()
    workflow_failure_category: str | None = None
    workflows: tuple[WorkflowSpec, ...] = ()  # the specs that can apply to it (docs/corpus.md)
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
    workflows: tuple[WorkflowSpec, ...] = ()
    left_out: tuple[str, ...] = ()  # the workflow specs a run leaves out, each its one-line error

    def by_id(self) -> dict[str, Task]:
        return {t.id: t for t in self.tasks}


def slice_of(task_id: str) -> str:
    """docs/corpus.md, "Slices": first byte of SHA-1(id) even -> train, odd -> eval."""
    return "train" if hashlib.sha1(task_id.encode()).digest()[0] % 2 == 0 else "eval"


def find_task_files(tasks_root: Path) -> list[Path]:
    """Every task.yaml under ``tasks_root`` (not below a task dir, not in ``_example`` or the
    shared ``base/`` layers), sorted. A task.yaml that is a directory is listed too: loading it is
    that task's error, never a task silently skipped (a dangling task.yaml link marks no task)."""
    return sorted(_task_files(tasks_root))


def has_task_files(tasks_root: Path) -> bool:
    """Whether ``find_task_files`` would find one: the walk stops at the first."""
    return next(_task_files(tasks_root), None) is not None


def _task_files(tasks_root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(tasks_root):
        task_file = "task.yaml" in filenames and os.path.isfile(os.path.join(dirpath, "task.yaml"))
        if task_file or "task.yaml" in dirnames:
            dirnames[:] = []
            rel = Path(dirpath).relative_to(tasks_root)
            if "_example" not in rel.parts:
                yield Path(dirpath) / "task.yaml"
        else:
            top = dirpath == str(tasks_root)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (top and d == BASE))


def workspace_layers(tasks_root: Path, domain: str) -> tuple[Path, ...]:
    """The shared layers every task of ``domain`` starts from, in akm-bench's order:
    ``base/workspace/``, then ``base/domains/<domain>/workspace/`` (later layers win, and the
    task's own ``workspace/`` is copied last). ``base/`` sits beside the tasks root, as in
    akm-bench (``fixtures/corpus/base``); without one there, inside it (docs/corpus.md, "Layout")."""
    base = tasks_root.parent / BASE
    if not base.is_dir():
        base = tasks_root / BASE
    candidates = (base / "workspace", base / "domains" / domain / "workspace")
    return tuple(p for p in candidates if p.is_dir())


def load_corpus(tasks_root: Path, stashes_root: Path) -> Corpus:
    """Load and validate every task; the first bad task.yaml, duplicate id or missing fixture raises."""
    corpus, errors = load_lenient(tasks_root, stashes_root, bad_specs=True)
    if errors:
        raise CorpusError(next(iter(errors.values())))
    return corpus


def load_lenient(tasks_root: Path, stashes_root: Path, *, bad_specs: bool = False) -> tuple[Corpus, dict[Path, str]]:
    """Load every valid task and collect the error of each invalid task.yaml, by path.

    The pytest layer turns each error into that file's collection error and ``validate``
    lists them all, so one bad task neither hides the others nor is silently skipped. A bad
    workflow spec is an error of its own (by the spec's path) when ``bad_specs`` (``validate``),
    and so is a task naming it; a run leaves the spec out instead, its tasks checked by the
    specs that loaded, and says so (``Corpus.left_out``, a warning of the run and its report).
    """
    if not tasks_root.is_dir():
        raise CorpusError(f"{tasks_root}: tasks root is not a directory; pass --bench-corpus DIR")
    specs, errors = load_specs_lenient(workflows_dir(tasks_root))
    bad = set(errors)
    left_out = () if bad_specs else tuple(f"{e}; left out of this run, its checks not made" for e in errors.values())
    errors = errors if bad_specs else {}
    tasks: list[Task] = []
    seen: dict[str, Path] = {}
    layers_of: dict[str, tuple[Path, ...]] = {}  # a domain's layers, looked up once per load
    for path in find_task_files(tasks_root):
        try:
            task = load_task(path)
            if task.domain not in layers_of:
                layers_of[task.domain] = workspace_layers(tasks_root, task.domain)
            layers = layers_of[task.domain]
            if layers:
                task = dataclasses.replace(task, layers=layers)
            task = with_workflows(task, specs, workflows_dir(tasks_root), bad, strict=bad_specs)
            if task.id in seen:
                raise CorpusError(f"{path}: id: duplicate task id {task.id!r}, also in {seen[task.id]}")
            check_stash(task, stashes_root)
            check_paths(task)
            check_verifier(task)
        except CorpusError as err:
            errors[path] = str(err)
            continue
        seen[task.id] = path
        tasks.append(task)
    tasks.sort(key=lambda t: t.id)
    return Corpus(tasks_root, stashes_root, tuple(tasks), specs, left_out), errors


def with_workflows(
    task: Task, specs: tuple[WorkflowSpec, ...], where: Path, bad: set[Path] | None = None, *, strict: bool = True
) -> Task:
    """``task`` with the specs that can apply to it; naming a spec that does not exist is an
    error, and so is naming one whose file (in ``bad``) did not load, when ``strict``."""
    known = {s.id for s in specs}
    for name in task.expected_workflows:
        broken = [p for p in bad or () if p.stem == name]
        if name not in known and (strict or not broken):
            have = ", ".join(sorted(known)) or f"none (no specs in {where})"
            why = f"{broken[0]} did not load (its own error above)" if broken else f"specs: {have}"
            raise CorpusError(f"{task.yaml_path}: expected_workflows: no workflow spec {name!r}; {why}")
    chosen = for_task(specs, task.domain, task.expected_workflows)
    return dataclasses.replace(task, workflows=chosen) if chosen else task


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


def check_verifier(task: Task) -> None:
    """The verifier's files must be there: without them every cell would be a harness error."""
    tests, script = task.task_dir / "tests", task.task_dir / "verify.sh"
    # pytest's default file patterns: the pytest verifier runs with no ini file (cell/verifiers.py).
    if task.verifier == "pytest" and not any(p.is_file() for g in ("test_*.py", "*_test.py") for p in tests.rglob(g)):
        raise CorpusError(f"{task.yaml_path}: verifier: pytest, but {tests} holds no test_*.py; add the tests there")
    if task.verifier == "script" and not script.is_file():
        raise CorpusError(f"{task.yaml_path}: verifier: script, but there is no {script}; add it (exit 0 on a pass)")


# Paths the harness copies or runs: each must lead to a place inside the task directory, so a
# task can neither pull another directory into the akm arm's stash or the workspace nor run
# (and fingerprint) a file it does not contain.
_TASK_PATHS = (
    ("workspace", "workspace"),
    ("verify.sh", "verifier"),
    ("tests", "verifier"),
    ("solution/solve.sh", "solution"),
)


def inside_task(task: Task, rel: str, what: str, root: Path | None = None) -> Path:
    """``task_dir / rel`` resolved; a CorpusError naming ``what`` if it leads outside the task.
    ``root``: the task dir resolved, when the caller has it (resolving costs a stat per part)."""
    root = task.task_dir.resolve() if root is None else root
    path = (task.task_dir / rel).resolve()
    if Path(rel).is_absolute() or not path.is_relative_to(root):
        raise CorpusError(
            f"{task.yaml_path}: {what}: {rel!r} leads outside the task; it must name a path inside the task directory"
        )
    return path


def check_paths(task: Task) -> None:
    """The workspace, verifier and solution, where present, must stay inside the task."""
    root: Path | None = None
    for rel, what in _TASK_PATHS:
        if os.path.lexists(task.task_dir / rel) and not _plainly_inside(task.task_dir, rel):
            root = task.task_dir.resolve() if root is None else root
            inside_task(task, rel, f"{what} ({rel})", root)


def _plainly_inside(task_dir: Path, rel: str) -> bool:
    """Whether the existing ``task_dir / rel`` is inside the task without resolving it: no part of
    ``rel`` is a link or "..", so it resolves to the resolved task dir joined with ``rel``. One
    lstat per part instead of one per part of the whole path, twice (benchmarks/README.md,
    "Where the overhead goes"); anything else takes ``inside_task``'s full check."""
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        return False
    path = str(task_dir)
    for part in parts:
        path = os.path.join(path, part)
        if os.path.islink(path):
            return False
    return True


def load_task(path: Path) -> Task:
    """Parse and validate one task.yaml."""
    if path.is_dir():
        raise CorpusError(f"{path}: is a directory; replace it with the task's YAML file of fields (docs/corpus.md)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CorpusError(f"{path}: cannot read: {err}") from err
    try:
        data = load_yaml(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise CorpusError(f"{path}: invalid YAML{where}: {problem}") from err
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a mapping of task fields, got {type(data).__name__}")
    return _task_from_mapping(path, data, text)


def _task_from_mapping(path: Path, data: dict[str, Any], text: str) -> Task:
    fields = TaskFields(path, data)
    unknown = sorted(str(k) for k in data if k not in _KNOWN_KEYS)
    if unknown:
        raise fields.bad(unknown[0], "unknown field; remove it or check its spelling")
    task_id = fields.required_str("id")
    stash = fields.required_str("stash")
    if not _FIXTURE_NAME.match(stash):
        raise fields.bad("stash", f"{stash!r} is not a fixture name (letters, digits, . _ -)")
    transfer = fields.refs("expected_transfer_from")
    verifier = fields.one_of("verifier", VERIFIERS, fields.required_str("verifier"))
    expected = fields.pattern("expected_match")
    if verifier == "regex" and expected is None:
        raise fields.bad("expected_match", "required for verifier: regex")
    return Task(
        id=task_id,
        title=fields.required_str("title"),
        domain=fields.required_str("domain"),
        difficulty=fields.one_of("difficulty", DIFFICULTIES, fields.required_str("difficulty")) or "",
        stash=stash,
        verifier=verifier or "",
        task_dir=path.parent,
        yaml_text=text,
        budget=Budget(*fields.budget()),
        declared_slice=fields.one_of("slice", SLICES, fields.optional_str("slice")),
        gold_ref=fields.optional_str("gold_ref"),
        stash_overlay=fields.optional_str("stash_overlay"),
        expected_match=expected,
        memory_ability=fields.one_of("memory_ability", MEMORY_ABILITIES, fields.optional_str("memory_ability")),
        task_family=fields.optional_str("task_family"),
        workflow_focus=fields.optional_str("workflow_focus"),
        expected_workflows=fields.names("expected_workflows"),
        workflow_failure_category=fields.optional_str("workflow_failure_category"),
        expected_transfer_from=transfer,
        abstention_case=fields.optional_bool("abstention_case"),
        conflict_case=fields.optional_bool("conflict_case"),
        stale_guidance_case=fields.optional_bool("stale_guidance_case"),
        akm_keywords=fields.optional_str("akm_keywords"),
    )
