"""--bench-sandbox through pytest: the mode in use is shown, recorded, and keeps samples apart."""

from __future__ import annotations

import json

import pytest

from tests.support.bench import INI, STORE, read_report, samples
from tests.support.bwrap import require_bwrap
from tests.support.corpus import write_stash, write_task

ORACLE = ("corpus", "--bench-agent", "oracle", "--bench-seeds", "1", "--bench-report", "out", "-p", "no:cacheprovider")


def test_auto_without_bwrap_warns_in_terminal_and_report(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AKMBENCH_BWRAP", "")
    result = bench.runpytest(*ORACLE)
    result.assert_outcomes(passed=6)
    out = result.stdout.str()
    assert "sandbox none" in out and "cells run UNSANDBOXED" in out
    report = read_report(bench.path)
    assert any("cells run UNSANDBOXED" in w for w in report["warnings"])
    assert report["provenance"]["sandbox"] == "none"
    assert "cells run UNSANDBOXED" in (bench.path / "out" / "summary.md").read_text()
    assert all("sandbox" not in s["fingerprint"] for s in samples(bench.path / STORE, missing_ok=False))


def test_none_is_quiet(bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked for by name (here through the ini twin), unsandboxed runs need no warning."""
    monkeypatch.setenv("AKMBENCH_BWRAP", "")
    bench.makeini(INI + "bench_sandbox = none\n")
    result = bench.runpytest(*ORACLE)
    result.assert_outcomes(passed=6)
    assert "sandbox none" in result.stdout.str() and "UNSANDBOXED" not in result.stdout.str()
    assert not any("sandbox" in w for w in read_report(bench.path)["warnings"])


@pytest.mark.parametrize(
    "args, message",
    [
        (("--bench-sandbox", "docker"), "--bench-sandbox: expected one of auto, bwrap, none, got 'docker'"),
        (("--bench-sandbox", "bwrap"), "--bench-sandbox bwrap: AKMBENCH_BWRAP='' is not an executable"),
        (("--bench-sandbox-ro", "nowhere"), "nowhere does not exist; give a file or directory the sandboxed agent"),
    ],
)
def test_usage_errors(
    bench: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], message: str
) -> None:
    monkeypatch.setenv("AKMBENCH_BWRAP", "")
    result = bench.runpytest(*ORACLE, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and message in errors[0], result.stderr.str()
    assert not (bench.path / ".akmbench" / "store").exists()


def test_sandboxed_samples_resume_apart_under_xdist(bench: pytest.Pytester) -> None:
    """bwrap on two workers; a rerun resumes from the store; unsandboxed samples do not count."""
    require_bwrap()
    first = bench.runpytest_subprocess(*ORACLE, "--bench-sandbox", "bwrap", "-n", "2")
    first.assert_outcomes(passed=6)
    stored = samples(bench.path / STORE, missing_ok=False)
    assert len(stored) == 6 and {s["fingerprint"]["sandbox"] for s in stored} == {"bwrap"}
    assert read_report(bench.path)["provenance"]["sandbox"] == "bwrap"
    again = bench.runpytest_subprocess(*ORACLE, "--bench-sandbox", "bwrap", "-n", "2", "-v")
    assert again.stdout.str().count("PASSED (from store)") == 6
    assert len(samples(bench.path / STORE, missing_ok=False)) == 6
    plain = bench.runpytest_subprocess(*ORACLE, "--bench-sandbox", "none", "-v")
    assert "from store" not in plain.stdout.str()
    assert len(samples(bench.path / STORE, missing_ok=False)) == 12
    assert read_report(bench.path)["provenance"]["sandbox"] == "none"


def test_offline_report_finds_sandboxed_samples(bench: pytest.Pytester) -> None:
    """The report command rebuilds a sandboxed run: it takes the sandbox from the latest sample."""
    require_bwrap()
    bench.runpytest_subprocess(*ORACLE, "--bench-sandbox", "bwrap").assert_outcomes(passed=6)
    result = bench.run(
        "python", "-m", "pytest_akmbench", "report", "--agent", "oracle", "--seeds", "1", "--out", "offline"
    )
    assert result.ret == 0, result.stderr.str()
    offline = json.loads((bench.path / "offline" / "report.json").read_text())
    assert offline["aggregate"]["noakm"]["runs"] == 3 and offline["provenance"]["sandbox"] == "bwrap"


def test_sandbox_ro_lets_the_agent_read_a_path(pytester: pytest.Pytester) -> None:
    """A path named with bench_sandbox_ro (the ini twin) is readable inside; without it, not."""
    require_bwrap()
    extra = pytester.path / "extra"
    extra.mkdir()
    (extra / "hello.txt").write_text("hello\n")
    write_task(pytester.path / "corpus" / "tasks", "alpha/reads-extra", solve=f"cat '{extra}/hello.txt' > out.txt\n")
    write_stash(pytester.path / "corpus" / "stashes")
    args = (
        "corpus",
        "--bench-agent",
        "oracle",
        "--bench-seeds",
        "1",
        "--bench-arms",
        "noakm",
        "--bench-sandbox",
        "bwrap",
        "--bench-fresh",
        "-p",
        "no:cacheprovider",
    )
    pytester.makeini(INI)
    pytester.runpytest(*args).assert_outcomes(failed=1)
    pytester.makeini(INI + "bench_sandbox_ro =\n    extra\n")
    pytester.runpytest(*args).assert_outcomes(passed=1)
