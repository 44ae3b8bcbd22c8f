from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_akmbench.system import lifecycle

HOLDER = """
import sys, time
from pathlib import Path
from pytest_akmbench.system import lifecycle
lifecycle.claim_run(Path(sys.argv[1]), sys.argv[2], controller=True)
print("ready", flush=True)
time.sleep(60)
"""


def age(path: Path, hours: float) -> None:
    old = time.time() - hours * 3600
    os.utime(path, (old, old))


@pytest.fixture
def live_run(tmp_path: Path):
    """A separate process holding run 'live' the way a bench does."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), "live"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    yield proc
    proc.kill()
    proc.wait()


class TestClean:
    """clean removes stale run dirs, never a live run's, never the store."""

    def test_stale_live_and_recent(
        self, tmp_path: Path, live_run: subprocess.Popen[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Old dead runs go; a live run (even an old one) and a recent dead run stay."""
        (tmp_path / "stale" / "cell-1" / "workspace").mkdir(parents=True)
        (tmp_path / "stale" / ".alive").touch()
        age(tmp_path / "stale", 7)
        (tmp_path / "recent" / "cell-2").mkdir(parents=True)
        age(tmp_path / "live", 7)
        assert lifecycle.clean(tmp_path, older_than_h=6) == 0
        assert not (tmp_path / "stale").exists()
        assert (tmp_path / "live").exists() and (tmp_path / "recent").exists()
        assert "removed 1 stale run dirs" in capsys.readouterr().out

    def test_liveness_follows_the_holder(self, tmp_path: Path, live_run: subprocess.Popen[str]) -> None:
        """A run is live exactly while a process holds its lock; a crash releases it."""
        assert lifecycle.live_runs(tmp_path) == [tmp_path / "live"]
        assert (tmp_path / "live" / "bench.pid").read_text() == str(live_run.pid)
        live_run.kill()
        live_run.wait()
        assert lifecycle.live_runs(tmp_path) == []


class TestKill:
    """kill signals every live bench; a second call escalates."""

    def test_no_bench(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """With nothing running, kill says so and succeeds."""
        assert lifecycle.kill(tmp_path) == 0
        assert capsys.readouterr().out.strip() == "no bench running"

    def test_sigterm_then_sigkill(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The first kill sends SIGTERM (ignored here), the second SIGKILL."""
        # SIGTERM is ignored before the holder claims the run and says "ready": otherwise a kill
        # arriving between "ready" and the ignore would end it (a race under load).
        stubborn = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + HOLDER
        proc = subprocess.Popen(
            [sys.executable, "-c", stubborn, str(tmp_path), "run1"], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        try:
            lifecycle.kill(tmp_path, everything=True)
            time.sleep(0.5)
            assert proc.poll() is None
            assert "sent SIGTERM" in capsys.readouterr().out
            lifecycle.kill(tmp_path, everything=True)
            assert proc.wait(timeout=10) == -9
            assert "sent SIGKILL" in capsys.readouterr().out
        finally:
            proc.kill()
            proc.wait()


PROJECT_HOLDER = """
import sys, time
from pathlib import Path
from pytest_akmbench.system import lifecycle
lifecycle.claim_run(Path(sys.argv[1]), sys.argv[2], controller=True, project=Path(sys.argv[3]))
print("ready", flush=True)
time.sleep(60)
"""


class TestKillOnlyThisProject:
    """Item 14: the tmp root is shared by every project of a user; kill stops only the current one's."""

    def hold(self, tmp_path: Path, run: str, project: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", PROJECT_HOLDER, str(tmp_path / "cells"), run, str(project)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return proc

    def test_other_projects_are_left_alone(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """From inside project a, kill stops a's bench, names b's and leaves it running; --all stops both."""
        a, b = tmp_path / "a", tmp_path / "b"
        (a / "sub").mkdir(parents=True)
        b.mkdir()
        mine, theirs = self.hold(tmp_path, "run-a", a), self.hold(tmp_path, "run-b", b)
        try:
            assert lifecycle.kill(tmp_path / "cells", project=a / "sub") == 0
            assert mine.wait(timeout=10) == -15
            time.sleep(0.3)
            assert theirs.poll() is None
            out = capsys.readouterr().out
            assert "sent SIGTERM to bench run run-a" in out
            assert f"left alone: 1 bench of another project (run-b in {b})" in out and "--all" in out
            assert lifecycle.kill(tmp_path / "cells", project=a) == 0
            assert "no bench of this project running" in capsys.readouterr().out
            assert theirs.poll() is None
            assert lifecycle.kill(tmp_path / "cells", project=a, everything=True) == 0
            assert theirs.wait(timeout=10) == -15
        finally:
            for proc in (mine, theirs):
                proc.kill()
                proc.wait()
