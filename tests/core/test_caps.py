"""Run-level spend caps (plugin/caps.py) in process: which caps a run sets, when one is reached,
the line a skipped cell shows, and what the run record and the report keep of them. The skip
itself, on real cells, is tested by tests/plugin/test_spend_caps.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from pytest_akmbench.plugin import caps
from pytest_akmbench.plugin.state import STATE_KEY, BenchState
from pytest_akmbench.run.resume import StoredSamples
from pytest_akmbench.tracks.attribute.track import AttributeTrack
from pytest_akmbench.tracks.track import SoundnessTrack, Track


def state(usd: float | None = None, tokens: float | None = None, track: Track | None = None) -> BenchState:
    settings = SimpleNamespace(
        budget_usd=usd,
        budget_run_tokens=tokens,
        origins={"budget_usd": "--bench-budget-usd", "budget_run_tokens": "bench.json budgetRunTokens"},
    )
    return cast(BenchState, SimpleNamespace(settings=settings, run_id="r1", track=track or Track(), plugins={}))


def run(cost: float | None = None, tokens: int | None = None, run_id: str = "r1") -> dict[str, Any]:
    record: dict[str, Any] = {"run_id": run_id}
    if cost is not None:
        record["cost_usd"] = cost
    if tokens is not None:
        record.update(token_measurement="measured", tokens={"total": tokens, "input": tokens})
    return record


def test_the_caps_set_and_where() -> None:
    assert caps.parse(state()) == []
    assert caps.parse(state(usd=1.5, tokens=1000)) == [
        caps.Cap("usd", 1.5, "--bench-budget-usd"),
        caps.Cap("tokens", 1000, "bench.json budgetRunTokens"),
    ]
    assert caps.parse(state(tokens=0)) == [caps.Cap("tokens", 0, "bench.json budgetRunTokens")]


def test_a_cap_is_reached_at_its_limit_and_counts_every_record_once() -> None:
    spend = caps.SpendCaps(state(usd=1.0), caps.parse(state(usd=1.0)))
    records = [run(cost=0.25), run(cost=0.5)]
    assert spend.reason(records) is None
    assert spend.reason(records) is None  # the same records read again add nothing
    records.append(run(cost=0.25))
    assert spend.reason(records) == (
        "not run: spend cap $1.0000 reached ($1.0000 spent by this run; --bench-budget-usd)"
    )


def test_the_first_cap_reached_is_named_in_tokens() -> None:
    both = state(usd=5.0, tokens=100)
    spend = caps.SpendCaps(both, caps.parse(both))
    assert spend.reached([run(cost=0.1, tokens=99)]) is None
    hit = spend.reached([run(cost=0.1, tokens=99), run(tokens=2)])
    assert hit == (caps.Cap("tokens", 100, "bench.json budgetRunTokens"), 101.0)
    assert hit is not None
    assert hit[0].text(hit[1]) == "101 tokens" and caps.Cap("usd", 1, "x").text(0.12345) == "$0.1235"
    assert spend.records() == [
        {"kind": "usd", "limit": 5.0, "origin": "--bench-budget-usd"},
        {"kind": "tokens", "limit": 100, "origin": "bench.json budgetRunTokens"},
    ]


def test_the_report_block_is_the_runs_own_spend() -> None:
    s = state(usd=1.0)
    spend = caps.SpendCaps(s, caps.parse(s))
    spend.not_run = 3
    stored = StoredSamples([{**run(cost=0.75), "schema": 1}, {**run(cost=5.0, run_id="r0"), "schema": 1}])
    assert spend.block(stored) == {"kind": "usd", "limit": 1.0, "spent": 0.75, "reached": False, "not_run": 3}


def test_a_track_that_refuses_caps_is_one_line_and_one_that_ignores_them_installs_none() -> None:
    config = SimpleNamespace(stash={}, pluginmanager=None)
    with pytest.raises(pytest.UsageError, match=r"^--bench-budget-usd: spend caps apply to utility runs only"):
        caps.install(cast(pytest.Config, config), state(usd=1.0, track=AttributeTrack()))
    caps.install(cast(pytest.Config, config), state(usd=1.0, track=SoundnessTrack()))  # registers nothing
    caps.install(cast(pytest.Config, config), state(track=AttributeTrack()))  # no cap: nothing to refuse


def test_the_controller_counts_the_cells_a_cap_skipped() -> None:
    s = state(usd=1.0)
    spend = caps.SpendCaps(s, caps.parse(s))
    assert spend.block(StoredSamples())["not_run"] == 0
    reason = "not run: spend cap $1.0000 reached ($1.0000 spent by this run; --bench-budget-usd)"
    reports = [
        SimpleNamespace(skipped=True, when="setup", longrepr=("task.yaml", 3, f"Skipped: {reason}")),
        SimpleNamespace(skipped=True, when="setup", longrepr=("task.yaml", 9, f"Skipped: {reason}")),
        SimpleNamespace(skipped=True, when="setup", longrepr=("task.yaml", 4, "Skipped: no opencode")),
        SimpleNamespace(skipped=True, when="call", longrepr=("task.yaml", 5, reason)),
        SimpleNamespace(skipped=False, when="setup", longrepr=None),
    ]
    for report in reports:
        spend.pytest_runtest_logreport(cast(pytest.TestReport, report))
    assert spend.not_run == 2  # the two cells a cap skipped, nothing else


def test_a_utility_run_with_a_cap_installs_it_and_its_report_block() -> None:
    registered: list[tuple[object, str]] = []
    pluginmanager = SimpleNamespace(register=lambda plugin, name: registered.append((plugin, name)))
    s = state(tokens=10)
    config = cast(pytest.Config, SimpleNamespace(stash={STATE_KEY: s}, pluginmanager=pluginmanager))
    assert caps.report_block(config, StoredSamples()) is None  # no cap installed: no block
    caps.install(config, s)
    ((plugin, name),) = registered
    assert name == caps.PLUGIN and s.plugins == {caps.PLUGIN: plugin}
    assert isinstance(plugin, caps.SpendCaps) and plugin.state is s and plugin.caps == caps.parse(s)
    stored = StoredSamples([{**run(tokens=12), "schema": 1}])
    assert caps.report_block(config, stored) == {
        "kind": "tokens",
        "limit": 10,
        "spent": 12.0,
        "reached": True,
        "not_run": 0,
    }
