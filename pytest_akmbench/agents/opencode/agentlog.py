"""opencode's own log of a cell that ended in a harness error, kept beside its transcript.

opencode writes its log under the cell's private HOME (``$XDG_DATA_HOME/opencode/log/``), which
goes with the run dir when the cell ends. When the harness, the provider or opencode failed,
that log is the one place saying why ("Unexpected server error. Check server logs"), so it is
copied next to the cell's transcript, scrubbed of secrets and private to the owner, and the
harness error names it (docs/opencode.md, "When a cell errors").
"""

from __future__ import annotations

import os
from pathlib import Path

from ...store.scrub import Scrubber
from ...system.untrusted import read_inside

LIMIT = 256 * 1024  # the tail of each file: what led up to the error


def keep(run_dir: Path, transcript: Path, scrub: Scrubber) -> Path | None:
    """Copy opencode's log files and its stderr (tails) into ``<transcript>.opencode.log``."""
    sources = sorted(run_dir.glob("home/.local/share/opencode/log/*.log")) + sorted(
        p for p in [run_dir / "opencode" / "stderr.log"] if p.is_file()
    )
    if not sources:
        return None
    target = transcript.with_name(transcript.name.rsplit(".", 1)[0] + ".opencode.log")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            for source in sources:
                out.write(f"==> {source.relative_to(run_dir)} <==\n".encode())
                # The agent could have swapped a log for a link to any file: only its own are read.
                out.write(scrub.bytes(read_inside(source, run_dir, limit=LIMIT, tail=True) or b""))
                out.write(b"\n")
    except OSError:
        return None
    return target
