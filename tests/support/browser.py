"""Headless Chromium (Debian's ``chromium`` package) for tests that load a page in a real browser.

Each call starts a fresh browser with its own profile directory, waits for it to exit and
kills its whole process group if it does not, so nothing outlives the call.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

MISSING = "chromium not installed: apt-get install chromium (bash .ci/setup installs it)"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def chromium() -> str:
    """The chromium executable, or skip with the reason."""
    found = shutil.which("chromium") or next((p for p in ("/usr/bin/chromium",) if os.access(p, os.X_OK)), None)
    if found is None:
        pytest.skip(MISSING)
    return found


def run(page: Path, *args: str, timeout_s: float = 90) -> str:
    """Load ``page`` (a local file) with ``args`` added to the flags; the browser's stdout."""
    exe = chromium()
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "HOME": profile},  # never the user's own chromium profile or config
        )
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"chromium did not finish loading {page} within {timeout_s} s") from None
        finally:
            try:  # helpers (zygote, GPU process) share the group; none may outlive the browser
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert proc.returncode == 0, f"chromium exited {proc.returncode}: {err[-2000:]}"
    return out


def dump_dom(page: Path) -> str:
    """The DOM after the page's scripts ran, serialised."""
    return run(page, "--dump-dom", "--virtual-time-budget=5000")


def screenshot(page: Path, png: Path, width: int = 1100, height: int = 3000) -> Path:
    run(page, f"--screenshot={png}", f"--window-size={width},{height}", "--hide-scrollbars")
    assert png.is_file() and png.stat().st_size > 1000, f"no screenshot written to {png}"
    return png
