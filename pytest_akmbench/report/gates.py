"""Bench-level gates (``--bench-gate``): conditions on the envelope that decide a CI run.

Grammar (one expression per gate):

* ``METRIC OP NUMBER`` with OP one of ``>= <= > < ==``. METRIC is one of
  ``ARM.pass_rate``, ``ARM.pass_rate.low``, ``ARM.pass_rate.high``, ``ARM.pass_at_1``,
  ``ARM.tokens_per_pass``, ``ARM.tokens_per_run``, ``ARM.wallclock_ms``,
  ``ARM.harness_errors``, ``ARM.budget_exceeded``, ``ARM.flaky_tasks`` (ARM = noakm, akm,
  synthetic); ``lift`` (akm − noakm paired delta), ``lift.low``, ``lift.high``, ``lift.p``
  (the paired interval and the Holm-adjusted permutation p); ``synthetic_lift`` and its
  ``.low/.high/.p`` (akm − synthetic); ``harness_errors``, ``budget_exceeded`` (all runs);
  ``negative_transfer_count``; ``flaky_tasks``; ``cells_partial``, ``cells_missing``
  (reporting floor); ``token_coverage``; ``correct_asset_loaded``, ``feedback_recorded``,
  ``searched_before_acting`` (akm trajectory rates); ``workflow_compliance``, its ``.low``,
  ``workflow_strict_pass_rate`` (the workflow block; absent without workflow specs).
* ``lift.significant`` / ``synthetic_lift.significant``: the report's verdict is that akm is
  better, beyond noise (Holm-adjusted permutation p < 0.05, positive delta).
* ``no-regression:PATH``: no arm's pass rate is lower than in the report at PATH beyond noise
  (the aggregate test of :mod:`compare`, Holm over the arms), and every arm and task that had
  valid runs there still has them. A baseline without per-task rows fails it: nothing pairs.
* ``no-task-regression:PATH``: as ``no-regression``, and no single task regressed beyond noise
  (per-task Fisher exact tests, Holm over every task and arm compared).

A metric that is not available (an arm that did not run) fails its gate, never passes it.
Every gate fails when the report is unreliable by the verdict's rule (:func:`lift.unreliable`:
an arm over 10% harness errors, or harness errors differing between compared arms beyond
noise); the regression gates count harness errors as runs that did not pass, on both sides.
Gates on a comparison's interval or test (``.low``, ``.high``, ``.p``, ``.significant``) also
fail with fewer paired tasks than the test can ever be significant with. Pure: no pytest.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..records import ARMS
from .envelope_types import Envelope, GateResult

# lift and compare are imported where a gate is evaluated: parse() runs at every bench start-up,
# a --co included, which never evaluates one (benchmarks/README.md, "Collection, third pass").

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
}
_EXPR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(>=|<=|==|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_ARM_FIELDS = {
    "pass_rate": ("pass_rate",),
    "pass_rate.low": ("pass_rate_ci", "low"),
    "pass_rate.high": ("pass_rate_ci", "high"),
    "pass_at_1": ("pass_at_1",),
    "tokens_per_pass": ("tokens_per_pass",),
    "tokens_per_run": ("tokens_per_run",),
    "wallclock_ms": ("wallclock_ms",),
    "harness_errors": ("harness_error_count",),
    "budget_exceeded": ("budget_exceeded_count",),
    "flaky_tasks": ("flaky_tasks",),
}
_PAIRED = {"": "delta", ".low": "low", ".high": "high", ".p": "p_value_holm"}
_COMPARISONS = {"lift": ("aggregate", "delta", "paired"), "synthetic_lift": ("aggregate", "akm_over_synthetic_paired")}
_REGRESSION_KINDS = ("no-regression", "no-task-regression")


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _digger(*keys: str) -> Callable[[Envelope], Any]:
    """A getter of ``envelope[k1][k2]...`` (None when a key is missing)."""
    return lambda envelope: _dig(envelope, *keys)


def _getter(metric: str) -> Callable[[Envelope], Any] | None:
    arm, _, rest = metric.partition(".")
    if arm in ARMS and rest in _ARM_FIELDS:
        path = _ARM_FIELDS[rest]
        return lambda envelope: _dig(envelope, "aggregate", arm, *path)
    for name, where in _COMPARISONS.items():
        if metric.startswith(name) and metric[len(name) :] in _PAIRED:
            suffix = metric[len(name) :]
            if suffix == "" and name == "lift":
                return lambda envelope: _dig(envelope, "aggregate", "delta", "pass_rate")
            if suffix == "" and name == "synthetic_lift":
                return lambda envelope: _dig(envelope, "aggregate", "akm_over_synthetic_lift")
            return _digger(*where, _PAIRED[suffix])
    simple: dict[str, Callable[[Envelope], Any]] = {
        "harness_errors": lambda envelope: sum(r["outcome"] == "harness_error" for r in envelope.get("runs") or []),
        "budget_exceeded": lambda envelope: sum(r["outcome"] == "budget_exceeded" for r in envelope.get("runs") or []),
        "negative_transfer_count": lambda envelope: envelope.get("negative_transfer_count"),
        "flaky_tasks": lambda envelope: len(envelope.get("flaky_tasks") or []),
        "cells_partial": lambda envelope: sum(
            c["partial"] for c in (_dig(envelope, "floor_coverage", "by_arm") or {}).values()
        ),
        "cells_missing": lambda envelope: sum(
            c["missing"] for c in (_dig(envelope, "floor_coverage", "by_arm") or {}).values()
        ),
        "token_coverage": lambda envelope: _dig(envelope, "token_measurement", "coverage"),
        "correct_asset_loaded": lambda envelope: _dig(envelope, "trajectory", "akm", "correct_asset_loaded"),
        "feedback_recorded": lambda envelope: _dig(envelope, "trajectory", "akm", "feedback_recorded"),
        "searched_before_acting": lambda envelope: _dig(envelope, "trajectory", "akm", "searched_before_acting"),
        "workflow_compliance": _digger("workflow", "overall_compliance"),
        "workflow_compliance.low": _digger("workflow", "overall_compliance_ci", "low"),
        "workflow_strict_pass_rate": _digger("workflow", "strict_pass_rate"),
    }
    return simple.get(metric)


def parse(expr: str) -> dict[str, Any]:
    """Validate one gate expression; ValueError with a one-line message when it is not valid."""
    text = expr.strip()
    for kind in _REGRESSION_KINDS:
        if text.startswith(kind + ":"):
            path = text[len(kind) + 1 :].strip()
            if not path:
                raise ValueError(f"--bench-gate {expr!r}: {kind} needs a report path, e.g. {kind}:base/report.json")
            return {"kind": kind, "path": path}
    if text in ("lift.significant", "synthetic_lift.significant"):
        return {"kind": "significant", "metric": text}
    m = _EXPR.match(text)
    if not m:
        raise ValueError(
            f"--bench-gate {expr!r}: expected METRIC OP NUMBER (e.g. akm.pass_rate>=0.6), "
            "lift.significant, no-regression:PATH or no-task-regression:PATH"
        )
    metric, op, number = m.groups()
    if _getter(metric) is None:
        raise ValueError(
            f"--bench-gate {expr!r}: unknown metric {metric!r}; try akm.pass_rate, lift, lift.low or harness_errors"
        )
    return {"kind": "threshold", "metric": metric, "op": op, "value": float(number)}


def evaluate(envelope: Envelope, gates: list[str], base_dir: Path) -> list[GateResult]:
    """``[{gate, ok, observed, message}]`` per gate; every expression is parsed first. On an
    unreliable report (:func:`unreliable`) every gate fails, keeping what it observed."""
    parsed = [(g, parse(g)) for g in gates]
    out: list[GateResult] = []
    for g, spec in parsed:
        if spec["kind"] in _REGRESSION_KINDS:
            out.append(_no_regression(envelope, g, spec, base_dir))
        elif spec["kind"] == "significant":
            out.append(_significant(envelope, g, spec))
        else:
            out.append(_threshold(envelope, g, spec))
    why = unreliable(envelope)
    if why is None:
        return out
    # A gate that failed on its own keeps its own reason; one that would pass says why it did not.
    return [
        r if not r["ok"] else {**r, "ok": False, "message": f"not passed: unreliable, {why}; {r['message']}"}
        for r in out
    ]


def unreliable(envelope: Envelope) -> str | None:
    """Why the report's runs cannot decide a gate, by the verdict's rule (:func:`lift.unreliable`)
    applied to each arm and to each pair the report compares; None when they can. A gate must not
    pass on the valid runs of an arm whose runs mostly broke: an akm release that breaks akm turns
    its failures into harness errors, which leave every pass rate (docs/report.md, "Gates")."""
    agg = envelope.get("aggregate") or {}
    errors = {
        arm: {"runs": a["runs"], "harness_errors": a.get("harness_error_count") or 0}
        for arm in ARMS
        if isinstance(a := agg.get(arm), dict) and a.get("runs")
    }
    groups = [[arm] for arm in errors] + [["akm", b] for b in ("noakm", "synthetic") if "akm" in errors and b in errors]
    from . import lift as lift_mod

    for group in groups:
        why = lift_mod.unreliable({arm: errors[arm] for arm in group})
        if why is not None:
            return why
    return None


def withhold(results: list[GateResult], problems: int) -> list[GateResult]:
    """Every gate failed, keeping what it observed: a report that lacks cells of its plan (or
    names another problem) measured part of the run, and a gate must not pass on the part
    (docs/ci.md). ``problems`` 0: cells of the selection have no sample yet."""
    gap = f"{problems} problem(s) in its warnings" if problems else "cells of its selection have no sample"
    why = f"not passed: the report is incomplete ({gap})"
    return [{**r, "ok": False, "message": f"{why}; on the samples it has, {r['message']}"} for r in results]


def _comparison(envelope: Envelope, metric: str) -> dict[str, Any] | None:
    name = metric.partition(".")[0]
    block = _dig(envelope, *_COMPARISONS[name]) if name in _COMPARISONS else None
    return block if isinstance(block, dict) else None


def _significant(envelope: Envelope, gate: str, spec: dict[str, Any]) -> GateResult:
    block = _comparison(envelope, spec["metric"])
    if block is None or block.get("p_value_holm") is None:
        return {
            "gate": gate,
            "ok": False,
            "observed": None,
            "message": f"{spec['metric']} is not available (arm not run or no paired task)",
        }
    from . import lift as lift_mod

    refusal = lift_mod.gate_refusal(block, spec["metric"])
    if refusal:
        return {"gate": gate, "ok": False, "observed": None, "message": refusal}
    ok = bool(block["significant"]) and (block["delta"] or 0) > 0
    what = "akm better beyond noise" if ok else "not significantly better"
    return {
        "gate": gate,
        "ok": ok,
        "observed": block["p_value_holm"],
        "message": f"{what}: {block['delta']:+.2f}, Holm-adjusted p = {block['p_value_holm']:.2g} over {block['tasks']} paired tasks",
    }


def _threshold(envelope: Envelope, gate: str, spec: dict[str, Any]) -> GateResult:
    getter = _getter(spec["metric"])
    assert getter is not None  # parse() checked it
    if spec["metric"].endswith((".low", ".high", ".p")) and spec["metric"].partition(".")[0] in _COMPARISONS:
        from . import lift as lift_mod

        refusal = lift_mod.gate_refusal(_comparison(envelope, spec["metric"]), spec["metric"])
        if refusal:
            return {"gate": gate, "ok": False, "observed": None, "message": refusal}
    observed = getter(envelope)
    if not isinstance(observed, (int, float)) or isinstance(observed, bool):
        return {
            "gate": gate,
            "ok": False,
            "observed": None,
            "message": f"{spec['metric']} is not available (arm not run or no data)",
        }
    ok = _OPS[spec["op"]](float(observed), spec["value"])
    shown = f"{observed:.4g}" if isinstance(observed, float) else str(observed)
    verb = "holds" if ok else "fails"
    return {
        "gate": gate,
        "ok": ok,
        "observed": observed,
        "message": f"{spec['metric']} = {shown}, {verb} {spec['op']} {spec['value']:g}",
    }


def _no_regression(envelope: Envelope, gate: str, spec: dict[str, Any], base_dir: Path) -> GateResult:
    from .compare import changes as compare_mod

    path = Path(spec["path"])
    if not path.is_absolute():
        path = base_dir / path
    try:
        base = compare_mod.load_report(path)
    except ValueError as err:
        return {"gate": gate, "ok": False, "observed": None, "message": str(err)}
    result = compare_mod.compare(base, envelope)
    problem = _not_comparable(base, envelope, result, path)
    if problem is None and (why := unreliable(base)) is not None:
        problem = f"the base report {path} is unreliable: {why}"
    if problem is not None:
        return {"gate": gate, "ok": False, "observed": None, "message": problem}
    counted = compare_mod.compare(_errors_as_failures(base), _errors_as_failures(envelope))
    return _regression_verdict(gate, spec["kind"], counted, path)


def _errors_as_failures(envelope: Envelope) -> Envelope:
    """The report with every harness error counted as a run that did not pass, in both the
    per-task rows and the arms' pass rates. A regression gate compares what each arm delivered:
    a run that broke is not a pass, and leaving it out of the denominator would let a release
    that breaks most runs keep the pass rate of the few that survived (docs/report.md, "Gates")."""
    tasks = []
    by_arm: dict[str, list[float]] = {}
    for entry in envelope.get("tasks") or []:
        t = dict(entry)
        for arm in ARMS:
            row = t.get(arm)
            if not isinstance(row, dict):
                continue
            count, passes = row.get("count"), row.get("passes")
            if isinstance(count, int) and count > 0 and isinstance(passes, int):
                t[arm] = {**row, "valid_count": count, "pass_rate": passes / count}
                by_arm.setdefault(arm, []).append(passes / count)
        tasks.append(t)
    agg = dict(envelope.get("aggregate") or {})
    for name, rates in by_arm.items():
        if isinstance(agg.get(name), dict):
            agg[name] = {**agg[name], "pass_rate": sum(rates) / len(rates)}
    return {**envelope, "tasks": tasks, "aggregate": agg}


def _not_comparable(base: Envelope, envelope: Envelope, result: dict[str, Any], path: Path) -> str | None:
    """Why the comparison cannot clear the gate: refused, or an arm or a task that had valid runs
    in the base report has none now; None when it can."""
    if not result["ok"]:
        return f"cannot compare with {path}: {result['message']}"
    from .compare import changes as compare_mod

    lost = [arm for arm in ARMS if compare_mod.arm_ran(base, arm) and not compare_mod.arm_ran(envelope, arm)]
    if lost:
        return f"arm {', '.join(lost)} ran in {path} but has no valid run now (missing or all harness errors)"
    if not result["arms"]:
        return f"no arm ran in both this report and {path}"
    gone = [
        f"{arm}:{t['id']}" for arm, c in result["arms"].items() for t in c["perTask"] if t["presence"] == "base-only"
    ]
    if gone:
        shown = ", ".join(gone[:5]) + (f", … and {len(gone) - 5} more" if len(gone) > 5 else "")
        return f"{len(gone)} task(s) with valid runs in {path} have none now: {shown}"
    # A baseline without per-task rows (a reference report, or one written with no tasks) leaves
    # nothing to pair: no test can find a regression, so the gate must not pass for want of one.
    unpaired = [arm for arm, c in result["arms"].items() if not c["paired"]["tasks"]]
    if unpaired:
        return (
            f"arm {', '.join(unpaired)}: no task has valid runs in both this report and {path} "
            "(the baseline has no per-task rows), so a regression cannot be tested"
        )
    return None


def _regression_verdict(gate: str, kind: str, result: dict[str, Any], path: Path) -> GateResult:
    """Fails when an arm (or, for no-task-regression, a task) regressed beyond noise."""
    regressed = {
        arm: c["paired"]["delta"] for arm, c in result["arms"].items() if c["beyond_noise"] and c["paired"]["delta"] < 0
    }
    tasks = [
        f"{arm}:{t['id']} {t['delta']:+.2f}"
        for arm, c in result["arms"].items()
        for t in c["perTask"]
        if t["beyond_noise"] and t["delta"] < 0
    ]
    task_note = f"; tasks regressed beyond noise: {', '.join(tasks)}" if tasks else ""
    if regressed:
        detail = ", ".join(f"{arm} {d:+.2f}" for arm, d in regressed.items())
        return {
            "gate": gate,
            "ok": False,
            "observed": regressed,
            "message": f"regressed beyond noise vs {path}: {detail}{task_note}",
        }
    if kind == "no-task-regression" and tasks:
        return {
            "gate": gate,
            "ok": False,
            "observed": tasks,
            "message": f"{len(tasks)} task(s) regressed beyond noise vs {path} (Fisher exact, Holm over "
            f"{result['per_task_family']} task comparisons): {', '.join(tasks)}",
        }
    deltas = {arm: c["paired"]["delta"] for arm, c in result["arms"].items()}
    detail = ", ".join(f"{arm} {d:+.2f}" for arm, d in deltas.items())
    what = "no arm or task" if kind == "no-task-regression" else "no arm"
    return {
        "gate": gate,
        "ok": True,
        "observed": deltas,
        "message": f"{what} regressed beyond noise ({detail}){task_note}",
    }
