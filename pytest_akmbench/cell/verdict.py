"""A verifier's verdict, how a verifier's process is run, and the sandbox it runs in
(docs/architecture.md, "Isolation"); shared by the verifier kinds (cell/verifiers.py,
cell/pytest_verifier.py)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..system.procs import ProcessTracker
from ..system.sandbox import Sandbox, for_verifier

TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    exit_code: int | None
    output: str
    error: str | None = None
    timed_out: bool = False
    tamper: str | None = None  # why the verdict itself looks forged (a pytest that never reported)

    @property
    def tail(self) -> str:
        """The end of the output, saying so when its start was cut."""
        if len(self.output) <= TAIL_CHARS:
            return self.output
        return f"[… {len(self.output) - TAIL_CHARS} earlier characters cut …]\n" + self.output[-TAIL_CHARS:]


def run(procs: ProcessTracker, argv: list[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> Verdict:
    try:
        code, output, timed_out = procs.run(argv, cwd=cwd, env=env, timeout_s=timeout_s)
    except OSError as err:
        return Verdict(False, None, "", error=f"verifier failed to start: {err}")
    if timed_out:
        return Verdict(False, None, output + f"\nverifier timed out after {timeout_s:g}s", timed_out=True)
    return Verdict(code == 0, code, output)


def fresh(scratch: Path, prefix: str) -> Path:
    """A new private directory in ``scratch`` (a run's cells share one; several verifier runs
    may share one scratch), ``scratch`` made only when missing: its first directory, not each."""
    try:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=scratch))
    except FileNotFoundError:
        scratch.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=scratch))


@contextmanager
def verifier_box(
    mode: str,
    copy: Path,
    workspace: Path,
    writable: Sequence[Path],
    procs: ProcessTracker,
    *,
    output: bool = True,
) -> Iterator[tuple[Sandbox, Path | None]]:
    """While active, ``procs`` starts everything in the verifier's sandbox: ``workspace`` (also
    at ``copy/workspace``), ``writable`` and, with ``output``, a fresh output directory (given)
    read-write, the task's copy and the bench's Python read-only, no network."""
    out = fresh(copy.parent, "out-") if output else None
    outs = [] if out is None else [out]
    # The task's layout: the workspace at copy/workspace, which the copy leaves free until a first
    # run over it (the pytest verifier runs its tests again over a pristine workspace).
    place = copy / "workspace"
    if mode == "none":  # no mount: a link makes it
        try:
            place.symlink_to(workspace)
        except FileExistsError:  # the first run's link
            place.unlink()
            place.symlink_to(workspace)
    else:  # the mount point
        place.mkdir(exist_ok=True)
        place.chmod(0o755)
    box = for_verifier(
        mode,
        rw=[workspace, *writable, *outs],
        ro=[copy],
        mounts=[(workspace, copy / "workspace", True)],
        # The sandbox's uid (when the bench runs as root) must write them: an agent that wrote its
        # files from the harness's own process left them root's.
        owned=[workspace, *writable, *outs],
    )
    with box.applied(procs):
        yield box, out
