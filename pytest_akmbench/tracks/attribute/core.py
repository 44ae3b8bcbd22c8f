"""The attribute track: which assets of the stash matter (docs/tracks.md, "attribute").

Leave-one-out: each of the base run's most loaded assets is masked (removed from the akm
arm's stash copy) and the akm cells of the tasks whose base runs loaded it run again. An
asset's contribution is the paired delta unmasked rate − masked rate over those tasks, with the
paired test and interval of the utility report (report/lift.py), Holm-adjusted over the
assets. The base is a utility report.json of this plugin: its akm runs say which assets each
task loaded, and so choose the assets and the tasks.

The unmasked side is a fresh rerun of the same akm cells at seeds after the base's
(:func:`reference_seeds`), never the base's own runs: those chose the assets and the tasks,
and a diligent run that loads more also passes more, so the base's rate on the tasks where
an asset was loaded is biased upwards and an asset that does nothing would look like it
lifts the pass rate (docs/tracks.md, "Why a fresh unmasked rerun").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...agents.settings import table
from ...cell.masks import canonical
from ...corpus.config import load_run_config
from ...corpus.tasks import Corpus, select
from ...errors import ConfigError, CorpusError
from ...report import lift, metrics
from ...report.envelope_types import AttributeEnvelope
from ...report.render import notes
from ...report.render.fmt import fmt_ci, fmt_p, signed

DEFAULT_TOP = 5
RANKING = (
    "assets loaded by the base's valid akm runs, ranked by load_count descending, then "
    "load_pass_rate descending, then asset_ref ascending; the first top are masked"
)
STRATEGY = "leave-one-out"
REFERENCE = (
    "fresh unmasked akm runs of the same tasks at seeds after the base's: the base's own runs chose "
    "the assets and the tasks, so they are not compared"
)


@dataclass(frozen=True, slots=True)
class Base:
    """What the attribute track reads from the base report."""

    path: Path
    model: str | None
    akm_version: str | None
    seeds: int
    task_ids: tuple[str, ...]
    akm_runs: tuple[dict[str, Any], ...]  # the base's akm-arm runs[] rows
    fingerprints: frozenset[str]
    complete: bool
    providers: dict[str, Any] | None = None  # provenance.providers: absent in reports made before it
    config: Path | None = None  # the run config given as the base, when one was


@dataclass(frozen=True, slots=True)
class Target:
    """One asset to mask: its rank in the base and the tasks whose base runs loaded it."""

    ref: str  # kind:name
    rank: int
    tasks: tuple[str, ...]
    load_count: int
    load_count_passing: int


def is_run_config(path: Path) -> bool:
    """Whether ``--bench-base`` names a run config rather than a report: a JSON object with a
    ``schemaVersion`` and none of a report's ``runs`` or ``aggregate`` (anything else is read,
    and refused if need be, as a report)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(data, dict) and "schemaVersion" in data and "runs" not in data and "aggregate" not in data


def report_of_config(path: Path, report_dir: Path, corpus: Corpus) -> Path:
    """The report.json the utility run of the run config ``path`` writes: the report directory
    of this run (a run config does not name one), checked to be that config's run."""
    where = f"--bench-base {path}"
    config = load_run_config(path, table())
    track = config.get("track") or "utility"
    if track != "utility":
        raise ConfigError(f"{where}: a run config of the {track} track; give the run config of a utility run")
    arms = config.get("arms")
    if isinstance(arms, list) and "akm" not in arms:
        raise ConfigError(
            f"{where}: its arms ({', '.join(map(str, arms))}) leave out akm; the base must run the akm arm"
        )
    report = report_dir / "report.json"
    run = f"run `pytest --bench-config {path}` first, or pass --bench-report with the directory its run wrote to"
    if not report.is_file():
        raise ConfigError(f"{where}: its run's report {report} does not exist; {run}")
    try:
        wanted = {t.id for t in select(corpus, config.get("tasks"))[0]}
    except CorpusError as err:
        raise ConfigError(f"{where}: {err}") from None
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        ran = set((data.get("corpus") or {}).get("selectedTaskIds") or ())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        ran = set()  # load_base says what is wrong with the file
    stray = sorted(ran - wanted)
    if stray:
        raise ConfigError(
            f"{where}: {report} is not its run's report (it ran {stray[0]}, which the config does not select); {run}"
        )
    return report


def load_base(path: Path, config: Path | None = None) -> Base:
    """The base report, or a one-line ConfigError naming the file and the fix; ``config`` is the
    run config it was found from (``--bench-base`` then names that)."""
    where = f"--bench-base {config} (its report {path})" if config else f"--bench-base {path}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{where}: base report not found; give the report.json of a utility run", usage=True
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{where}: cannot read the base report: {getattr(err, 'strerror', None) or err}") from None
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{where}: not JSON (line {err.lineno} column {err.colno}: {err.msg}); give a report.json"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise ConfigError(f"{where}: not a report of this plugin (no runs[]); give the report.json of a utility run")
    if data.get("track", "utility") != "utility":
        raise ConfigError(f"{where}: a {data.get('track')} report; the base of attribute is a utility report")
    runs = tuple(r for r in data["runs"] if isinstance(r, dict) and r.get("arm") == "akm" and _row_ok(r))
    if not runs:
        raise ConfigError(f"{where}: the base has no akm-arm run; run the utility track with the akm arm first")
    corpus, prov, agent = (_obj(data, key) for key in ("corpus", "provenance", "agent"))
    seeds = corpus.get("seedsPerArm")
    return Base(
        path=path,
        model=agent.get("model"),
        akm_version=prov.get("akm_version") if isinstance(prov.get("akm_version"), str) else None,
        seeds=seeds if isinstance(seeds, int) and seeds > 0 else max(r["seed"] for r in runs),
        task_ids=tuple(sorted({r["task_id"] for r in runs})),
        akm_runs=runs,
        fingerprints=frozenset(str(f) for f in prov.get("fingerprints") or ()),
        complete=data.get("complete") is True,
        providers=prov["providers"] if isinstance(prov.get("providers"), dict) else None,
        config=config,
    )


def _obj(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _row_ok(row: Mapping[str, Any]) -> bool:
    return (
        isinstance(row.get("task_id"), str)
        and isinstance(row.get("seed"), int)
        and row.get("outcome") in ("pass", "fail", "budget_exceeded", "harness_error")
    )


def _loaded(row: Mapping[str, Any]) -> list[str]:
    """The assets a base run loaded, as ``kind:name``, each once."""
    out: list[str] = []
    for ref in row.get("assets_loaded") or ():
        try:
            key = canonical(str(ref))
        except ValueError:
            continue
        if key not in out:
            out.append(key)
    return out


def plan(base: Base, present: set[str], top: int = DEFAULT_TOP) -> tuple[list[Target], int]:
    """The assets to mask (ranked, at most ``top``) and how many assets the base loaded at all.
    Only valid runs (harness errors excluded) of tasks still in the corpus count: an asset is
    masked only on tasks whose base runs loaded it, the only ones where masking can matter."""
    counts: dict[str, list[int]] = {}
    tasks: dict[str, set[str]] = {}
    for row in base.akm_runs:
        if row["outcome"] == "harness_error" or row["task_id"] not in present:
            continue
        for ref in _loaded(row):
            counts.setdefault(ref, [0, 0])[0 if row["outcome"] == "pass" else 1] += 1
            tasks.setdefault(ref, set()).add(row["task_id"])

    def key(ref: str) -> tuple[int, float, str]:
        passing, failing = counts[ref]
        return (-(passing + failing), -passing / (passing + failing), ref)

    ranked = sorted(counts, key=key)
    targets = [
        Target(ref, i + 1, tuple(sorted(tasks[ref])), sum(counts[ref]), counts[ref][0])
        for i, ref in enumerate(ranked[: max(1, top)])
    ]
    return targets, len(ranked)


def reference_seeds(base: Base, seeds: int) -> tuple[int, ...]:
    """The seeds of the unmasked reference cells: ``seeds`` of them (as many as each masked
    asset gets, so a task's two sides are exchangeable when the asset does nothing), all after
    every seed of the base, so none is a run the plan was chosen from."""
    first = max(base.seeds, *(r["seed"] for r in base.akm_runs)) + 1
    return tuple(range(first, first + seeds))


def contribution(
    target: Target,
    reference: Mapping[str, Sequence[dict[str, Any]]],
    masked: Mapping[str, Sequence[dict[str, Any]]],
) -> dict[str, Any]:
    """One asset's row of ``attributions``: per-task rates, the paired delta and its test;
    ``reference`` holds the unmasked runs by task (the ``base_*`` fields are theirs)."""
    per_task, rows_b, rows_m, out_b, out_m = [], [], [], [], []
    for task_id in target.tasks:
        runs_b = sorted(reference.get(task_id, ()), key=lambda r: r["seed"])
        runs_m = sorted(masked.get(task_id, ()), key=lambda r: r["seed"])
        row_b, row_m = metrics.per_task(runs_b), metrics.per_task(runs_m)
        rows_b.append(row_b)
        rows_m.append(row_m)
        out_b.append(metrics.valid_outcomes(runs_b))
        out_m.append(metrics.valid_outcomes(runs_m))
        rate_b = row_b["pass_rate"] if row_b else None
        rate_m = row_m["pass_rate"] if row_m else None
        per_task.append(
            {
                "task_id": task_id,
                "base_pass_rate": rate_b,
                "masked_pass_rate": rate_m,
                "delta": None if rate_b is None or rate_m is None else rate_b - rate_m,
                "base_runs": len(runs_b),
                "masked_runs": len(runs_m),
                "masked_harness_errors": row_m["harness_error_count"] if row_m else 0,
            }
        )
    paired = [t for t in per_task if t["delta"] is not None]
    cmp = lift.compare_arms(("base", "masked"), rows_b, rows_m, out_b, out_m) if paired else None
    return {
        "asset_ref": target.ref,
        "rank": target.rank,
        "load_count": target.load_count,
        "load_count_passing": target.load_count_passing,
        "loaded_on_tasks": list(target.tasks),
        "base_pass_rate": _mean([t["base_pass_rate"] for t in paired]),
        "masked_pass_rate": _mean([t["masked_pass_rate"] for t in paired]),
        "marginal_contribution": cmp["delta"] if cmp else None,
        "paired_tasks": len(paired),
        "masked_runs": sum(t["masked_runs"] for t in per_task),
        "comparison": cmp,
        "per_task": per_task,
    }


def _mean(values: list[Any]) -> float | None:
    return sum(values) / len(values) if values else None


def build(
    *,
    base: Base,
    targets: Sequence[Target],
    assets_loaded: int,
    top: int,
    masked: Mapping[str, Mapping[str, Sequence[dict[str, Any]]]],
    reference: Mapping[str, Sequence[dict[str, Any]]],
    seeds: Sequence[int],
    agent: Mapping[str, Any],
    complete: bool,
    warnings: Sequence[str],
    timestamp: str,
) -> AttributeEnvelope:
    """The attribute envelope (docs/report.md, "The attribute envelope"); ``masked`` holds
    each asset's masked samples by task, ``reference`` the unmasked reruns by task, at the
    reference ``seeds``."""
    rows = [contribution(t, reference, masked.get(t.ref, {})) for t in targets]
    lift.adjust([r["comparison"] for r in rows if r["comparison"] is not None])
    for r in rows:
        cmp = r["comparison"]
        r["significant"] = bool(cmp and cmp["significant"])
    envelope: AttributeEnvelope = {
        "schemaVersion": 1,
        "track": "attribute",
        "timestamp": timestamp,
        "complete": complete,
        "agent": dict(agent),
        "base": {
            "path": str(base.path),
            "config": None if base.config is None else str(base.config),
            "model": base.model,
            "akm_version": base.akm_version,
            "complete": base.complete,
            "providers": base.providers,
        },
        "attribution": {
            "maskingStrategy": STRATEGY,
            "maskedRefs": [t.ref for t in targets],
            "top": top,
            "assets_loaded": assets_loaded,
            "ranking": RANKING,
            "reference": {"seeds": list(seeds), "rule": REFERENCE},
        },
        "maskingStrategy": STRATEGY,
        "runsPerformed": sum(r["masked_runs"] for r in rows),
        "referenceRunsPerformed": sum(len(runs) for runs in reference.values()),
        "attributions": rows,
        "warnings": list(warnings),
        "verdict": "",  # read from the rest, next
    }
    envelope["verdict"] = verdict(envelope)
    return envelope


def _claim(row: dict[str, Any]) -> str:
    c = row["comparison"]
    ci = fmt_ci(c["low"], c["high"], with_sign=True)
    if c["holm_family"] > 1:
        test = f"paired permutation p={fmt_p(c['p_value_holm'])}, Holm-adjusted over {c['holm_family']} assets"
    else:
        test = f"paired permutation p={fmt_p(c['p_value'])}"
    size = f"{c['tasks']} paired task{'' if c['tasks'] == 1 else 's'}"
    if not c["reliable"]:
        return f"{row['asset_ref']}: unreliable, too many harness errors ({signed(c['delta'])} {ci}, {test}), {size}"
    if row["significant"]:
        word = "lifts" if c["delta"] > 0 else "lowers"
        return f"{row['asset_ref']} {word} the akm pass rate by {signed(c['delta'])} {ci} ({test}), {size}"
    return f"{row['asset_ref']}: no significant contribution ({signed(c['delta'])} {ci}, {test}), {size}"


def verdict(envelope: AttributeEnvelope) -> str:
    """One line, in the style of the utility verdict: each masked asset's contribution
    (base − masked), beyond noise or not; the assets that matter first."""
    prefix = "" if envelope.get("complete", True) else "incomplete run — "
    rows = [r for r in envelope["attributions"] if r["comparison"] is not None]
    if not rows:
        return prefix + "no masked asset has a valid run on a task its base loaded it on: no contribution measured"
    rows.sort(key=lambda r: (not r["significant"], -(r["comparison"]["delta"] or 0.0), r["rank"]))
    matter = sum(r["significant"] for r in rows)
    head = f"{matter} of {len(rows)} masked asset{'' if len(rows) == 1 else 's'} matter"
    head += notes.few_paired_assets([r["comparison"] for r in rows])
    return prefix + head + ": " + "; ".join(_claim(r) for r in rows)
