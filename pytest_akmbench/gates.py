"""Bench-level gates (``--bench-gate``): conditions on the envelope that decide a CI run.

Grammar (one expression per gate):

* ``METRIC OP NUMBER`` with OP one of ``>= <= > < ==``. METRIC is one of
  ``ARM.pass_rate``, ``ARM.pass_rate.low``, ``ARM.pass_rate.high``, ``ARM.pass_at_1``,
  ``ARM.tokens_per_pass``, ``ARM.tokens_per_run``, ``ARM.wallclock_ms``,
  ``ARM.harness_errors``, ``ARM.budget_exceeded``, ``ARM.flaky_tasks`` (ARM = noakm, akm,
  synthetic); ``lift`` (akm − noakm pass rate), ``lift.low``, ``lift.high``, ``lift.p``
  (the paired interval and sign-test p); ``synthetic_lift`` and its ``.low/.high/.p`` (akm −
  synthetic); ``harness_errors``, ``budget_exceeded`` (all runs); ``negative_transfer_count``;
  ``flaky_tasks``; ``cells_partial``, ``cells_missing`` (reporting floor);
  ``token_coverage``; ``correct_asset_loaded``, ``feedback_recorded``,
  ``searched_before_acting`` (akm trajectory rates).
* ``no-regression:PATH``: no arm's pass rate is lower than in the report at PATH beyond
  noise, by the rule of :mod:`compare` (paired interval excludes 0 and sign-test p < 0.05).

A metric that is not available (an arm that did not run) fails its gate, never passes it.
Pure: no pytest.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import compare as compare_mod

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq,
}
_EXPR = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(>=|<=|==|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")
_ARMS = ("noakm", "akm", "synthetic")
_ARM_FIELDS = {
    "pass_rate": ("pass_rate",), "pass_rate.low": ("pass_rate_ci", "low"), "pass_rate.high": ("pass_rate_ci", "high"),
    "pass_at_1": ("pass_at_1",), "tokens_per_pass": ("tokens_per_pass",), "tokens_per_run": ("tokens_per_run",),
    "wallclock_ms": ("wallclock_ms",), "harness_errors": ("harness_error_count",),
    "budget_exceeded": ("budget_exceeded_count",), "flaky_tasks": ("flaky_tasks",),
}
_PAIRED = {"": "delta", ".low": "low", ".high": "high", ".p": "p_value"}


def _dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _getter(metric: str) -> Callable[[dict[str, Any]], Any] | None:
    arm, _, rest = metric.partition(".")
    if arm in _ARMS and rest in _ARM_FIELDS:
        path = _ARM_FIELDS[rest]
        return lambda env: _dig(env, "aggregate", arm, *path)
    for name, where in (("lift", ("aggregate", "delta", "paired")), ("synthetic_lift", ("aggregate", "akm_over_synthetic_paired"))):
        if metric.startswith(name) and metric[len(name):] in _PAIRED:
            suffix = metric[len(name):]
            if suffix == "" and name == "lift":
                return lambda env: _dig(env, "aggregate", "delta", "pass_rate")
            if suffix == "" and name == "synthetic_lift":
                return lambda env: _dig(env, "aggregate", "akm_over_synthetic_lift")
            return lambda env, w=where, k=_PAIRED[suffix]: _dig(env, *w, k)
    simple: dict[str, Callable[[dict[str, Any]], Any]] = {
        "harness_errors": lambda env: sum(r["outcome"] == "harness_error" for r in env.get("runs") or []),
        "budget_exceeded": lambda env: sum(r["outcome"] == "budget_exceeded" for r in env.get("runs") or []),
        "negative_transfer_count": lambda env: env.get("negative_transfer_count"),
        "flaky_tasks": lambda env: len(env.get("flaky_tasks") or []),
        "cells_partial": lambda env: sum(c["partial"] for c in (_dig(env, "floor_coverage", "by_arm") or {}).values()),
        "cells_missing": lambda env: sum(c["missing"] for c in (_dig(env, "floor_coverage", "by_arm") or {}).values()),
        "token_coverage": lambda env: _dig(env, "token_measurement", "coverage"),
        "correct_asset_loaded": lambda env: _dig(env, "trajectory", "akm", "correct_asset_loaded"),
        "feedback_recorded": lambda env: _dig(env, "trajectory", "akm", "feedback_recorded"),
        "searched_before_acting": lambda env: _dig(env, "trajectory", "akm", "searched_before_acting"),
    }
    return simple.get(metric)


def parse(expr: str) -> dict[str, Any]:
    """Validate one gate expression; ValueError with a one-line message when it is not valid."""
    text = expr.strip()
    if text.startswith("no-regression:"):
        path = text[len("no-regression:"):].strip()
        if not path:
            raise ValueError(f"--bench-gate {expr!r}: no-regression needs a report path, e.g. no-regression:base/report.json")
        return {"kind": "no-regression", "path": path}
    m = _EXPR.match(text)
    if not m:
        raise ValueError(f"--bench-gate {expr!r}: expected METRIC OP NUMBER (e.g. akm.pass_rate>=0.6) or no-regression:PATH")
    metric, op, number = m.groups()
    if _getter(metric) is None:
        raise ValueError(f"--bench-gate {expr!r}: unknown metric {metric!r}; try akm.pass_rate, lift, lift.low or harness_errors")
    return {"kind": "threshold", "metric": metric, "op": op, "value": float(number)}


def evaluate(envelope: dict[str, Any], gates: list[str], base_dir: Path) -> list[dict[str, Any]]:
    """``[{gate, ok, observed, message}]`` per gate; every expression is parsed first."""
    parsed = [(g, parse(g)) for g in gates]
    return [_no_regression(envelope, g, spec, base_dir) if spec["kind"] == "no-regression" else _threshold(envelope, g, spec)
            for g, spec in parsed]


def _threshold(env: dict[str, Any], gate: str, spec: dict[str, Any]) -> dict[str, Any]:
    getter = _getter(spec["metric"])
    assert getter is not None  # parse() checked it
    observed = getter(env)
    if not isinstance(observed, (int, float)) or isinstance(observed, bool):
        return {"gate": gate, "ok": False, "observed": None, "message": f"{spec['metric']} is not available (arm not run or no data)"}
    ok = _OPS[spec["op"]](float(observed), spec["value"])
    shown = f"{observed:.4g}" if isinstance(observed, float) else str(observed)
    verb = "holds" if ok else "fails"
    return {"gate": gate, "ok": ok, "observed": observed, "message": f"{spec['metric']} = {shown}, {verb} {spec['op']} {spec['value']:g}"}


def _no_regression(env: dict[str, Any], gate: str, spec: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    path = Path(spec["path"])
    if not path.is_absolute():
        path = base_dir / path
    try:
        base = compare_mod.load_report(path)
    except ValueError as err:
        return {"gate": gate, "ok": False, "observed": None, "message": str(err)}
    result = compare_mod.compare(base, env)
    if not result["ok"]:
        return {"gate": gate, "ok": False, "observed": None, "message": f"cannot compare with {path}: {result['message']}"}
    if not result["arms"]:
        return {"gate": gate, "ok": False, "observed": None, "message": f"no arm ran in both this report and {path}"}
    regressed = {arm: c["paired"]["delta"] for arm, c in result["arms"].items()
                 if c["beyond_noise"] and (c["paired"]["delta"] or 0) < 0}
    if regressed:
        detail = ", ".join(f"{arm} {d:+.2f}" for arm, d in regressed.items())
        return {"gate": gate, "ok": False, "observed": regressed, "message": f"regressed beyond noise vs {path}: {detail}"}
    deltas = {arm: c["paired"]["delta"] for arm, c in result["arms"].items()}
    detail = ", ".join(f"{arm} {'n/a' if d is None else f'{d:+.2f}'}" for arm, d in deltas.items())
    return {"gate": gate, "ok": True, "observed": deltas, "message": f"no arm regressed beyond noise ({detail})"}
