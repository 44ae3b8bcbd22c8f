"""``mutmut run``, safe for a suite whose tests adopt orphans (docs/testing.md, "Mutation testing").

mutmut runs the clean tests inside its main process, and the bench's process tracker makes the
process that runs it a child subreaper (docs/opencode.md, "Processes"). From then on, when a
mutant times out and is killed, the processes its tests had started (a verifier, a regex child
stuck backtracking) are re-parented to mutmut's main process. Two things went wrong there:

* mutmut waits for *any* child and looks the pid up among its mutants: the first orphan to end
  stopped the whole run with a ``KeyError`` (242 of 326 verifier mutants were left unrun);
* an orphan that sleeps instead of spinning never reaches its CPU limit, and outlived the run.

So this wrapper (1) lets mutmut's wait skip a pid that is not one of its mutants (the orphan is
reaped by that wait, nothing else changes), and (2) once mutants run, kills any child of the
main process that is not a mutant worker and has been seen twice, 2 s apart (a worker is
registered right after its fork, so it is never seen twice unregistered).
mutmut is imported only in :func:`main`, so ``tests/core/test_mutation_support.py`` can test the
wait and the sweep without it. Usage: ``python tests/support/mutmut_run.py run ...``, as ``python -m mutmut``. It runs as a
script, not as ``tests.support...``: mutmut imports the test files from its copy in ``mutants/``,
and a ``tests`` package already imported from the repository would shadow them.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    del sys.path[0]  # this script's directory: its helper modules are not top-level packages

_runners: list[Any] = []


def skip_strangers(wait: Callable[..., Any]) -> Callable[..., Any]:
    """``wait`` (mutmut's ``wait_for_result``), made to wait again when the pid it reaped is not one
    of its mutants (its registry lookup raises ``KeyError``): that pid was an adopted orphan."""

    def wait_for_result(self: Any, timeout: float | None = None) -> Any:
        while True:
            try:
                return wait(self, timeout)
            except KeyError:
                continue

    return wait_for_result


def children(parent: int) -> set[int]:
    """The pids whose parent is ``parent`` (from /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:
            out.add(int(stat.parent.name))
    return out


def sweep(parent: int, workers: set[int], suspects: set[int]) -> set[int]:
    """One pass of the orphan killer: kill each child of ``parent`` that is not a worker and was a
    suspect in the pass before; return this pass's suspects (the children that are not workers)."""
    strangers = children(parent) - workers
    for pid in strangers & suspects:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return strangers


def _kill_orphans() -> None:
    """Kill every adopted orphan, once mutants run (before that, the clean tests' children are legitimate)."""
    started = False
    suspects: set[int] = set()
    while True:
        time.sleep(2)
        workers = {pid for runner in _runners for pid in runner._running}
        started = started or bool(workers)
        if started:
            suspects = sweep(os.getpid(), workers, suspects)


def main() -> None:
    from mutmut.__main__ import cli
    from mutmut.workers import isolation

    original_init = isolation.ForkRunner.__init__

    def register(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        _runners.append(self)

    isolation.ForkRunner.__init__ = register  # type: ignore[method-assign]
    isolation.ForkRunner.wait_for_result = skip_strangers(isolation.ForkRunner.wait_for_result)  # type: ignore[method-assign]
    threading.Thread(target=_kill_orphans, daemon=True).start()
    cli()


if __name__ == "__main__":
    main()
