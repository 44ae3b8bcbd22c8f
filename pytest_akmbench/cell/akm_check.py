"""Before the first cell: the akm the akm arm gets can index a stash.

``akm --version`` alone does not prove the treatment works: a broken bundle or a missing runtime
shows only when akm indexes. One index of one selected task's stash, in a throwaway run dir,
costs a fraction of a second and turns a run of harness errors into one line (docs/akm.md).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..corpus.tasks import Task
from ..errors import ConfigError
from ..system.procs import ProcessTracker
from ..system.sandbox import for_cell
from . import akm
from .rundir import TreatmentDown, copy_stash, index_stash


def check_index(
    info: akm.AkmInfo,
    task: Task,
    stashes_root: Path,
    work_root: Path,
    marker: str,
    *,
    sandbox: str = "none",
    extra: Sequence[Path] = (),
) -> str:
    """Index ``task``'s stash as an akm cell would, in a sandbox made as a cell's (``sandbox``,
    ``extra``): an akm whose runtime the sandbox does not expose fails here, not in every cell.
    One line of what was indexed, else a ConfigError."""
    work_root.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="preflight-", dir=work_root))
    procs = ProcessTracker(marker)
    try:
        stash = run_dir / "stash"
        copy_stash(task, stashes_root, stash)
        env = akm.cell_env(info, stash, akm.private_env(run_dir / "home"))
        akm.write_config(info, env)
        with for_cell(sandbox, run_dir, akm=info.path, extra=extra).applied(procs):
            report = index_stash(info, stash, env, procs)
    except TreatmentDown as err:
        raise ConfigError(
            f"preflight: akm {info.version} at {info.path} cannot index stash {task.stash!r}"
            + (" inside the cell sandbox" if sandbox != "none" else "")
            + f": {err}; fix or reinstall akm (`{info.path} index` in a stash shows the same)"
            + (
                ", expose what it runs with --bench-sandbox-ro (a launcher's runtime must sit beside it)"
                if sandbox != "none"
                else ""
            )
            + ", or run --bench-arms noakm",
            usage=True,
        ) from None
    except OSError as err:
        raise ConfigError(f"preflight: cannot prepare stash {task.stash!r} for akm: {err}", usage=True) from None
    finally:
        procs.kill_all()
        shutil.rmtree(run_dir, ignore_errors=True)
    entries = report["entries"]
    return f"akm {info.version}: indexed stash {task.stash!r}" + (f" ({entries} assets)" if entries is not None else "")
