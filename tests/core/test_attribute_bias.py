"""The attribute track's unmasked side is a fresh rerun, not the base runs that chose the assets
and tasks (docs/tracks.md, "Why a fresh unmasked rerun"): where a run that loads more also
passes more, the base's own rate is biased upwards and an asset that does nothing looked like a
lift. A small seeded reproduction of benchmarks/claims_tracks.py's attribute null."""

from __future__ import annotations

import random
from pathlib import Path
from statistics import fmean
from typing import Any

from pytest_akmbench.tracks.attribute import core as attribute
from tests.core.test_attribute import base_of, row


def build(base: attribute.Base, masked: dict[str, Any], reference: dict[str, Any], seeds: tuple[int, ...]) -> Any:
    targets, loaded = attribute.plan(base, set(base.task_ids))
    return attribute.build(
        base=base, targets=targets, assets_loaded=loaded, top=5, masked=masked, reference=reference, seeds=seeds,
        agent={}, complete=True, warnings=[], timestamp="t",
    )  # fmt: skip


def test_an_asset_loaded_by_the_passing_runs_is_measured_against_fresh_runs(tmp_path: Path) -> None:
    """Every base run that loaded skill:x passed; the task really passes half the time, masked or
    not. bc40193 compared the base's 1.0 with the masked 0.5 and said skill:x lifts by +0.50."""
    tasks = [f"d/t{i}" for i in range(8)]
    base = base_of([row(t, s, "pass", ["skill:x"]) for t in tasks for s in (1, 2)], tmp_path)
    seeds = attribute.reference_seeds(base, 2)
    half = {t: [row(t, s, "pass" if s % 2 else "fail", None) for s in seeds] for t in tasks}
    masked = {"skill:x": {t: [row(t, s, "pass" if s % 2 else "fail", None) for s in (1, 2)] for t in tasks}}
    env = build(base, masked, half, seeds)
    (only,) = env["attributions"]
    assert only["base_pass_rate"] == 0.5 and only["marginal_contribution"] == 0.0 and not only["significant"]
    assert env["verdict"].startswith("0 of 1 masked asset matter: skill:x: no significant contribution (0.00 [")
    assert env["attribution"]["reference"]["seeds"] == [3, 4] and env["referenceRunsPerformed"] == 16
    assert only["per_task"][0]["base_runs"] == 2  # the reference's runs, not the base's


def test_reference_seeds_come_after_every_base_run(tmp_path: Path) -> None:
    base = base_of([row("d/a", 1, "pass", ["skill:x"]), row("d/a", 7, "fail", ["skill:x"])], tmp_path)
    assert base.seeds == 2 and attribute.reference_seeds(base, 3) == (8, 9, 10)


def test_seeded_null_with_loading_tied_to_passing(tmp_path: Path) -> None:
    """No asset does anything; a passing base run loads each of 4 assets with probability 0.2, a
    failing one with 0.05. The base's own runs as the unmasked side (bc40193) put an idle asset's
    mean delta near +0.04; fresh reference runs near 0."""
    rng = random.Random(4)
    before: list[float] = []
    after: list[float] = []
    for rep in range(12):
        probs = {f"d/t{i:02d}": rng.uniform(0.1, 0.9) for i in range(30)}
        rows = []
        for t, p in probs.items():
            for s in range(1, 6):
                passed = rng.random() < p
                loaded = [f"skill:a{k}" for k in range(4) if rng.random() < (0.2 if passed else 0.05)]
                rows.append(row(t, s, "pass" if passed else "fail", loaded))
        (tmp_path / str(rep)).mkdir()
        base = base_of(rows, tmp_path / str(rep), corpus={"seedsPerArm": 5})
        targets, _ = attribute.plan(base, set(probs))
        masked = {
            x.ref: {
                t: [row(t, s, "pass" if rng.random() < probs[t] else "fail", None) for s in range(1, 6)]
                for t in x.tasks
            }
            for x in targets
        }
        seeds = attribute.reference_seeds(base, 5)
        fresh = {t: [row(t, s, "pass" if rng.random() < p else "fail", None) for s in seeds] for t, p in probs.items()}
        own = {t: [r for r in base.akm_runs if r["task_id"] == t] for t in probs}
        before += [r["marginal_contribution"] for r in build(base, masked, own, ())["attributions"]]
        after += [r["marginal_contribution"] for r in build(base, masked, fresh, seeds)["attributions"]]
    assert fmean(before) > 0.025
    assert abs(fmean(after)) < 0.015
