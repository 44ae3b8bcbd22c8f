"""Every benchmark has a smoke mode that CI runs (benchmarks/smoke.py from .ci/run), so a
benchmark broken by a refactor fails CI instead of waiting for the next measurement."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks import smoke

ROOT = Path(__file__).resolve().parents[2]


def _help(script: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_every_benchmark_script_takes_smoke() -> None:
    scripts = smoke.scripts()
    assert {p.name for p in scripts} == {p.name for p in (ROOT / "benchmarks").glob("*.py")} - {"smoke.py"}
    with ThreadPoolExecutor(4) as pool:
        helps = list(pool.map(_help, scripts))
    missing = [
        f"{p.name} (exit {h.returncode}: {h.stderr.strip()[-200:]})"
        for p, h in zip(scripts, helps)
        if h.returncode != 0 or "--smoke" not in h.stdout
    ]
    assert not missing, (
        "benchmarks without a smoke mode; give each one with smoke.parse(parser, <option>=<tiny value>, ...)"
        f" (benchmarks/README.md, 'Smoke mode'): {missing}"
    )


def test_ci_runs_every_smoke_mode_before_the_suite() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python benchmarks/smoke.py" in ci
    assert ci.index("python benchmarks/smoke.py") < ci.index("python -m pytest -q -rs -n 2")


def test_the_runner_stops_at_the_first_broken_benchmark(tmp_path: Path) -> None:
    (tmp_path / "a_fine.py").write_text("import sys\nassert sys.argv[1:] == ['--smoke']\nprint('figures')\n")
    (tmp_path / "b_broken.py").write_text("raise SystemExit(3)\n")
    (tmp_path / "c_later.py").write_text("open(__file__ + '.ran', 'w').close()\n")
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "smoke.py"), "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "figures" in proc.stdout
    assert "FAILED: b_broken.py exited 3" in proc.stdout
    assert not (tmp_path / "c_later.py.ran").exists()


def test_the_runner_fails_a_benchmark_that_prints_a_traceback_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "quiet.py").write_text("pass\n")
    (tmp_path / "swallowed.py").write_text(
        "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()\nprint('figures')\n"
    )
    for name, problem in (("quiet.py", "printed nothing"), ("swallowed.py", "printed a traceback")):
        proc = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "smoke.py"), "--dir", str(tmp_path), name],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 1
        assert f"FAILED: {name} {problem}" in proc.stdout


def test_smoke_sets_the_tiny_sizes_and_only_under_smoke() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=400)
    assert smoke.parse(parser, [], reps=10).reps == 400
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=400)
    assert smoke.parse(parser, ["--smoke"], reps=10).reps == 10
