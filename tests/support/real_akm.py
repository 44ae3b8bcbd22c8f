"""Where the tests find real akm.

In order: ``AKMBENCH_TEST_AKM`` (paths separated by ``:``), the self-contained executables
``.ci/akm`` builds under ``.tools/akm/<version>/akm``, and an ``akm`` on PATH. Tests that need
one skip with the exact reason when there is none; CI builds both and refuses skips.
"""

from __future__ import annotations

import os
import shutil
from functools import cache
from pathlib import Path

import pytest

from pytest_akmbench.cell import akm

ROOT = Path(__file__).resolve().parents[2]
MISSING = "no real akm found: run bash .ci/setup with the akm bundles (see .ci/akm) or set AKMBENCH_TEST_AKM"


@cache
def found() -> dict[str, akm.AkmInfo]:
    """Every real akm at hand, by version, probed once per test process."""
    candidates = [Path(p) for p in os.environ.get("AKMBENCH_TEST_AKM", "").split(os.pathsep) if p]
    candidates += sorted((ROOT / ".tools" / "akm").glob("*/akm"))
    on_path = shutil.which("akm")
    if on_path:
        candidates.append(Path(on_path))
    infos: dict[str, akm.AkmInfo] = {}
    for path in candidates:
        info = akm.detect(path)
        infos.setdefault(info.version, info)
    return dict(sorted(infos.items(), key=lambda kv: tuple(int(x) for x in kv[0].split("."))))


def versions() -> list[str]:
    """The versions to parametrize over; one placeholder that skips when there is none."""
    return list(found()) or ["none"]


def get(version: str | None = None) -> akm.AkmInfo:
    """The akm of ``version`` (the newest one when None), or skip with the reason."""
    infos = found()
    if not infos or version == "none":
        pytest.skip(MISSING)
    if version is None:
        return infos[list(infos)[-1]]
    if version not in infos:
        pytest.skip(f"akm {version} not found ({MISSING})")
    return infos[version]
