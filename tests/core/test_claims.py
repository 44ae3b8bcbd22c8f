"""A claim per trial (store/claims.py): a second claimant waits for the holder and learns who
it was; the claim's file names its owner alone, is private, and is gone once released."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from pytest_akmbench.store import claims
from pytest_akmbench.store.claims import Claim


def test_the_claim_file_is_the_trials_hash_and_names_its_owner(tmp_path: Path) -> None:
    """Two versions of the bench on one store lock the same file for the same trial."""
    claim = Claim(tmp_path, "t\0akm\x001\0fp", owner="run a")
    digest = hashlib.sha256(b"t\0akm\x001\0fp").hexdigest()[:32]
    assert claim.path == tmp_path / "claims" / f"{digest}.lock"
    assert _acquire(claim) is None
    assert claim.path.read_text() == "run a"
    assert claim.path.stat().st_mode & 0o777 == 0o600  # the owner names a run: private
    assert claim.path.parent.stat().st_mode & 0o777 == 0o700
    claim.release()
    assert not claim.path.exists()
    claim.release()  # twice is harmless


def test_a_stale_file_is_claimed_and_names_only_the_new_owner(tmp_path: Path) -> None:
    """A crashed run leaves its file unlocked: the next claimant takes it and writes its own name."""
    claim = Claim(tmp_path, "t", owner="b")
    claim.path.parent.mkdir()
    claim.path.write_text("a run that crashed long ago")
    assert _acquire(claim) is None
    assert claim.path.read_text() == "b"
    claim.release()


def _acquire(claim: Claim) -> str | None:
    """``claim.acquire()``, failing the test instead of hanging it if it never returns."""
    thread, got = _wait_in_thread(claim, wait=0)
    thread.join(10)
    assert got, "acquire never returned"
    return got[0]


def _wait_in_thread(claim: Claim, wait: float = 0.3) -> tuple[threading.Thread, list[str | None]]:
    got: list[str | None] = []
    thread = threading.Thread(target=lambda: got.append(claim.acquire()), daemon=True)
    thread.start()
    time.sleep(wait)
    return thread, got


def test_a_second_claimant_waits_and_learns_who_held_the_trial(tmp_path: Path) -> None:
    first, second = Claim(tmp_path, "t", owner="run a (pid 1)"), Claim(tmp_path, "t", owner="run b")
    assert _acquire(first) is None
    thread, got = _wait_in_thread(second)
    assert got == []  # it waits while the first holds the trial
    first.release()
    thread.join(10)
    assert got == ["run a (pid 1)"]
    assert second.path.read_text() == "run b"  # it claimed anew, the released file being gone
    assert [p.name for p in second.path.parent.iterdir()] == [second.path.name]
    second.release()
    assert list(second.path.parent.iterdir()) == []


def test_a_holder_without_a_name_is_another_run(tmp_path: Path) -> None:
    first, second = Claim(tmp_path, "t", owner=""), Claim(tmp_path, "t", owner="b")
    first.acquire()
    thread, got = _wait_in_thread(second)
    first.release()
    thread.join(10)
    assert got == ["another run"]
    second.release()


def test_other_trials_do_not_wait(tmp_path: Path) -> None:
    first, other = Claim(tmp_path, "t", owner="a"), Claim(tmp_path, "u", owner="b")
    _acquire(first)
    assert _acquire(other) is None and other.path != first.path
    other.release()
    first.release()


def test_a_release_never_frees_another_claimants_file(tmp_path: Path) -> None:
    """A claim never acquired, or released already, leaves the trial's current holder alone."""
    early, holder = Claim(tmp_path, "t", owner="a"), Claim(tmp_path, "t", owner="b")
    _acquire(early)
    early.release()
    _acquire(holder)
    early.release()
    Claim(tmp_path, "t", owner="c").release()
    assert holder.path.read_text() == "b"
    holder.release()


def test_a_long_name_is_read_cut_and_never_fails_the_waiter(tmp_path: Path) -> None:
    """A waiter reads at most 512 bytes of the holder's name; a character cut there is replaced."""
    first = Claim(tmp_path, "t", owner="x" + "é" * 300)
    second = Claim(tmp_path, "t", owner="b")
    first.acquire()
    thread, got = _wait_in_thread(second)
    first.release()
    thread.join(10)
    assert got == ["x" + "é" * 255 + "\ufffd"]
    second.release()


def test_an_interrupt_while_waiting_is_raised_and_leaks_no_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = Claim(tmp_path, "t", owner="a")
    holder.acquire()
    real = claims.fcntl.flock

    def flock(fd: int, op: int) -> None:
        if op == claims.fcntl.LOCK_EX:  # the blocking wait: Ctrl-C arrives
            raise KeyboardInterrupt
        real(fd, op)

    monkeypatch.setattr(claims.fcntl, "flock", flock)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(KeyboardInterrupt):
        Claim(tmp_path, "t", owner="b").acquire()
    assert len(os.listdir("/proc/self/fd")) == before
    monkeypatch.undo()
    holder.release()
