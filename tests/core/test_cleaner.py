"""A finished cell's dirs are deleted off the cell's path, and all of them before the run ends."""

from __future__ import annotations

import threading
from pathlib import Path

from pytest_akmbench.system.cleaner import Cleaner, remove


def tree(root: Path, name: str) -> Path:
    d = root / name
    (d / "workspace" / "sub").mkdir(parents=True)
    (d / "workspace" / "sub" / "f.txt").write_text("x")
    (d / "home").mkdir()
    return d


def test_close_returns_once_every_dir_given_is_gone(tmp_path: Path) -> None:
    cleaner = Cleaner()
    dirs = [tree(tmp_path, f"cell-{i}") for i in range(20)]
    for d in dirs:
        cleaner.remove(d)
    cleaner.close()
    assert not any(d.exists() for d in dirs)
    assert [p.name for p in tmp_path.iterdir()] == []


def test_the_dirs_are_deleted_on_another_thread(tmp_path: Path, monkeypatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr("shutil.rmtree", lambda path, **_: seen.append(threading.current_thread().name))
    cleaner = Cleaner()
    cleaner.remove(tree(tmp_path, "cell"))
    cleaner.close()
    assert seen == ["akmbench-cleaner"]


def test_a_cleaner_works_again_after_close(tmp_path: Path) -> None:
    cleaner = Cleaner()
    cleaner.remove(tree(tmp_path, "a"))
    cleaner.close()
    cleaner.remove(second := tree(tmp_path, "b"))
    cleaner.close()
    assert not second.exists()
    cleaner.close()  # nothing given: returns at once


def test_without_a_cleaner_the_dir_goes_at_once(tmp_path: Path) -> None:
    d = tree(tmp_path, "cell")
    remove(d, None)
    assert not d.exists()
