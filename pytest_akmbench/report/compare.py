"""Compare two report envelopes: refuse what is not comparable, say what changed beyond noise.

Refusals (docs/report.md, "compare"), in order: schema, track, model, task corpus (hash, else
selected ids), fixture hash; the last three can be overridden, which turns them into warnings.
Unlike the reference, every arm that ran in both reports is compared, not only akm, and each
change carries a verdict on noise (docs/report.md, "compare"). Both reports ran the same tasks,
so the question is whether *these* tasks changed, and the runs of a task are the unit:

* per arm, aggregate: a stratified permutation test of "every task has the same pass
  probability in both reports" (runs permuted within each task), on the mean per-task change;
  it is exact whatever the number of runs of each task on each side (e.g. 3 seeds vs 5).
  Holm's adjustment runs over the arms compared;
* per task: Fisher's exact test on passes / valid runs, Holm over every task of every arm.

Pure: no pytest. ``main`` is the ``python -m pytest_akmbench compare`` entry point.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from tabulate import tabulate

from . import corpus_diff, metrics, significance, stats
from .fmt import num, signed

FLAT = 0.005
NOISE_RULE = (
    "aggregate: stratified permutation test over the tasks both reports ran (runs permuted within each task), "
    "Holm-adjusted p < 0.05 over the arms compared; per task: Fisher exact test, Holm-adjusted p < 0.05 over "
    "every task compared"
)


def _side(env: dict[str, Any], key: str) -> Any:
    return (env.get("corpus") or {}).get(key)


def _refuse(reason: str, message: str, warnings: list[str], **extra: Any) -> dict[str, Any]:
    return {"ok": False, "reason": reason, "message": message, **extra, "warnings": warnings}


def _check(
    base: dict[str, Any],
    head: dict[str, Any],
    allow_model: bool,
    allow_corpus: bool,
    allow_fixture: bool,
    warnings: list[str],
) -> dict[str, Any] | None:
    for name, env in (("base", base), ("current", head)):
        if env.get("schemaVersion") != 1:
            return _refuse(
                "schema_mismatch", f"{name} report has schemaVersion {env.get('schemaVersion')!r}; expected 1", warnings
            )
    for name, env in (("base", base), ("current", head)):
        if env.get("track") != "utility":
            return _refuse(
                "track_mismatch",
                f"{name} report has track {env.get('track')!r}; only utility reports compare",
                warnings,
            )
    bm = (base.get("agent") or {}).get("model") or "<unknown>"
    hm = (head.get("agent") or {}).get("model") or "<unknown>"
    if bm != hm:
        if not allow_model:
            return _refuse(
                "model_mismatch",
                f"models differ (base={bm!r}, current={hm!r}); use --allow-model-mismatch to diff anyway",
                warnings,
                baseModel=bm,
                currentModel=hm,
            )
        warnings.append(f"models differ (base={bm!r}, current={hm!r}) — diff requested via --allow-model-mismatch")
    bh, hh = _side(base, "taskCorpusHash"), _side(head, "taskCorpusHash")
    bids, hids = _side(base, "selectedTaskIds"), _side(head, "selectedTaskIds")
    if bh and hh and bh != hh:
        if not allow_corpus:
            extra: dict[str, Any] = {"baseTaskCorpusHash": bh, "currentTaskCorpusHash": hh}
            diff = corpus_diff.differing(base, head)
            extra.update(diff)
            which = corpus_diff.describe(diff) or "the reports do not say which tasks"
            return _refuse(
                "corpus_mismatch",
                f'task corpus hashes differ (base="{bh}", current="{hh}"): {which}',
                warnings,
                **extra,
            )
        which = corpus_diff.describe(corpus_diff.differing(base, head))
        warnings.append(
            f'task corpus hashes differ (base="{bh}", current="{hh}"){": " + which if which else ""} — diff requested '
            "via --allow-corpus-mismatch"
        )
    elif not bh and not hh and isinstance(bids, list) and isinstance(hids, list) and set(bids) != set(hids):
        if not allow_corpus:
            return _refuse(
                "corpus_mismatch",
                "selected task IDs differ",
                warnings,
                onlyInBase=sorted(set(bids) - set(hids)),
                onlyInCurrent=sorted(set(hids) - set(bids)),
            )
        warnings.append("selected task IDs differ — diff requested via --allow-corpus-mismatch")
    for name, value in (("base", bh), ("current", hh)):
        if not value:
            warnings.append(f"{name} report has no corpus.taskCorpusHash; proceeding without task-corpus-pin check")
    bf, hf = _side(base, "fixtureContentHash"), _side(head, "fixtureContentHash")
    if bf and hf and bf != hf:
        if not allow_fixture:
            return _refuse(
                "hash_mismatch",
                f'fixture-content hashes differ (base="{bf}", current="{hf}")',
                warnings,
                baseFixtureContentHash=bf,
                currentFixtureContentHash=hf,
            )
        warnings.append(
            f'fixture-content hashes differ (base="{bf}", current="{hf}") — diff requested via --allow-fixture-mismatch'
        )
    for name, value in (("base", bf), ("current", hf)):
        if not value:
            warnings.append(f"{name} report has no corpus.fixtureContentHash; proceeding without fixture-pin check")
    return None


def _counts(row: dict[str, Any] | None) -> tuple[int, int] | None:
    """(passes, valid runs) of a per-task row; reference envelopes only have rate × count."""
    if not isinstance(row, dict) or row.get("pass_rate") is None:
        return None
    n = row.get("valid_count", row.get("count"))
    if not isinstance(n, int) or n <= 0:
        return None
    c = row.get("passes")
    if not isinstance(c, int):
        c = round(row["pass_rate"] * n)
    return max(0, min(c, n)), n


def arm_ran(env: dict[str, Any], arm: str) -> bool:
    """True when the report has a measured pass rate for ``arm`` (a zeroed reference arm is not)."""
    agg = (env.get("aggregate") or {}).get(arm)
    if not isinstance(agg, dict) or agg.get("pass_rate") is None:
        return False
    return any(_counts(t.get(arm)) for t in env.get("tasks") or []) or not env.get("tasks")


def _sign(delta: float | None, higher_is_better: bool, flat: float = 0.0) -> str:
    if delta is None or abs(delta) <= flat:
        return "flat"
    return "improve" if (delta > 0) == higher_is_better else "regress"


def _d(a: Any, b: Any) -> float | None:
    return None if a is None or b is None else a - b


def _change_interval(strata: list[tuple[int, int, int, int]], delta: float) -> tuple[float, float]:
    """95% normal interval of the mean per-task change, with Agresti–Caffo variances per side
    (passes + 1 over runs + 2), so tasks at 0/n or n/n still carry their run noise."""
    var = math.fsum(
        ((c + 1) / (n + 2)) * (1 - (c + 1) / (n + 2)) / (n + 2)
        for ch, nh, cb, nb in strata
        for c, n in ((ch, nh), (cb, nb))
    )
    half = stats.Z_95 * math.sqrt(var) / len(strata)
    return max(-1.0, delta - half), min(1.0, delta + half)


def _compare_arm(base: dict[str, Any], head: dict[str, Any], arm: str) -> dict[str, Any]:
    ba, ha = base["aggregate"][arm], head["aggregate"][arm]
    btasks = {t["id"]: t.get(arm) for t in base.get("tasks") or [] if "id" in t}
    htasks = {t["id"]: t.get(arm) for t in head.get("tasks") or [] if "id" in t}
    per_task = []
    strata: list[tuple[int, int, int, int]] = []
    for tid in sorted(set(btasks) | set(htasks)):
        bc, hc = _counts(btasks.get(tid)), _counts(htasks.get(tid))
        if bc is None and hc is None:
            continue
        presence = "both" if bc and hc else "base-only" if bc else "current-only"
        row: dict[str, Any] = {
            "id": tid,
            "presence": presence,
            "base_pass_rate": bc[0] / bc[1] if bc else None,
            "current_pass_rate": hc[0] / hc[1] if hc else None,
            "base_ci": _ci(bc),
            "current_ci": _ci(hc),
            "base_runs": bc[1] if bc else None,
            "current_runs": hc[1] if hc else None,
        }
        row["delta"] = _d(row["current_pass_rate"], row["base_pass_rate"])
        row["sign"] = _sign(row["delta"], True, FLAT)
        row["p_value"] = significance.fisher_exact(*hc, *bc) if bc and hc else None
        row["p_value_holm"] = row["p_value"]
        row["beyond_noise"] = False  # set by compare() after Holm over every task
        per_task.append(row)
        if bc and hc:
            strata.append((*hc, *bc))
    test = significance.stratified_permutation_test(strata)
    delta = math.fsum(h / nh - b / nb for h, nh, b, nb in strata) / len(strata) if strata else None
    low, high = _change_interval(strata, delta) if delta is not None else (None, None)
    paired = {
        "tasks": len(strata),
        "delta": delta,
        "low": low,
        "high": high,
        "wins": sum(h * nb > b * nh for h, nh, b, nb in strata),
        "losses": sum(h * nb < b * nh for h, nh, b, nb in strata),
        "ties": sum(h * nb == b * nh for h, nh, b, nb in strata),
        "p_value": test["p_value"],
        "p_value_holm": test["p_value"],
        "holm_family": 1,
        "significant": False,
        "method": "stratified_permutation",
        "exact": test["exact"],
        "iterations": test["resamples"],
        "seed": significance.SEED,
        "unequal_runs": any(nh != nb for _, nh, _, nb in strata),
    }
    aggregate_delta = _d(ha.get("pass_rate"), ba.get("pass_rate"))
    return {
        "base": {"pass_rate": ba.get("pass_rate"), "pass_rate_ci": ba.get("pass_rate_ci"), "tasks": ba.get("tasks")},
        "current": {"pass_rate": ha.get("pass_rate"), "pass_rate_ci": ha.get("pass_rate_ci"), "tasks": ha.get("tasks")},
        "pass_rate_delta": aggregate_delta,
        "pass_rate_sign": _sign(aggregate_delta, True, FLAT),
        "tokens_per_pass_delta": _d(ha.get("tokens_per_pass"), ba.get("tokens_per_pass")),
        "tokens_per_pass_sign": _sign(_d(ha.get("tokens_per_pass"), ba.get("tokens_per_pass")), False),
        "wallclock_ms_delta": _d(ha.get("wallclock_ms"), ba.get("wallclock_ms")),
        "wallclock_ms_sign": _sign(_d(ha.get("wallclock_ms"), ba.get("wallclock_ms")), False),
        "paired": paired,
        "beyond_noise": False,  # set by compare() after Holm over the arms
        "perTask": per_task,
    }


def _holm(items: list[dict[str, Any]], flag: str) -> None:
    """Holm over the items that were tested; ``flag`` becomes adjusted p < alpha (and, for an
    aggregate, its interval excluding 0, so a verdict never contradicts the interval shown)."""
    tested = [i for i in items if i["p_value"] is not None]
    for item, p in zip(tested, significance.holm([i["p_value"] for i in tested])):
        item["p_value_holm"] = p
        item[flag] = p < significance.ALPHA and not (item.get("low", 1.0) <= 0.0 <= item.get("high", 1.0))


def _ci(counts: tuple[int, int] | None) -> dict[str, float] | None:
    if not counts:
        return None
    pair = stats.wilson_interval(*counts)
    return None if pair is None else {"low": pair[0], "high": pair[1]}


def compare(
    base: dict[str, Any],
    head: dict[str, Any],
    *,
    allow_model_mismatch: bool = False,
    allow_corpus_mismatch: bool = False,
    allow_fixture_mismatch: bool = False,
) -> dict[str, Any]:
    """The comparison of ``head`` (current) against ``base``; ``ok`` False means refused."""
    warnings: list[str] = []
    refused = _check(base, head, allow_model_mismatch, allow_corpus_mismatch, allow_fixture_mismatch, warnings)
    if refused is not None:
        return refused
    warnings += [w for w in (corpus_diff.incomplete("base", base), corpus_diff.incomplete("current", head)) if w]
    arms = [a for a in metrics.ARM_ORDER if arm_ran(base, a) and arm_ran(head, a)]
    for arm in metrics.ARM_ORDER:
        if arm_ran(base, arm) != arm_ran(head, arm):
            where = "base" if arm_ran(base, arm) else "current"
            warnings.append(f"arm {arm} ran only in the {where} report; not compared")
    compared = {arm: _compare_arm(base, head, arm) for arm in arms}
    _holm([c["paired"] for c in compared.values()], "significant")
    for c in compared.values():
        c["paired"]["holm_family"] = sum(x["paired"]["p_value"] is not None for x in compared.values())
        c["beyond_noise"] = c["paired"]["significant"]
    tasks = [t for c in compared.values() for t in c["perTask"]]
    _holm(tasks, "beyond_noise")
    bs, hs = _side(base, "seedsPerArm"), _side(head, "seedsPerArm")
    if bs != hs or any(c["paired"]["unequal_runs"] for c in compared.values()):
        counts = (
            f"seeds per arm: base {bs}, current {hs}" if bs != hs else "some tasks have different numbers of valid runs"
        )
        warnings.append(
            f"the reports differ in runs per task ({counts}): per-task rates are not equally precise; "
            "the tests use each task's own runs (stratified permutation, Fisher exact), which stays valid"
        )
    result: dict[str, Any] = {
        "ok": True,
        "baseModel": (base.get("agent") or {}).get("model"),
        "currentModel": (head.get("agent") or {}).get("model"),
        "baseFixtureContentHash": _side(base, "fixtureContentHash"),
        "currentFixtureContentHash": _side(head, "fixtureContentHash"),
        "warnings": warnings,
        "noise_rule": NOISE_RULE,
        "per_task_family": sum(t["p_value"] is not None for t in tasks),
        "arms": compared,
    }
    bl, hl = ((e.get("aggregate") or {}).get("delta") or {} for e in (base, head))
    if "akm" in arms and "noakm" in arms and bl.get("pass_rate") is not None and hl.get("pass_rate") is not None:
        result["lift"] = {
            "base": bl["pass_rate"],
            "current": hl["pass_rate"],
            "change": hl["pass_rate"] - bl["pass_rate"],
        }
    if "akm" in compared:  # the reference's akm-only shape, for tools that read it
        c = compared["akm"]
        result["aggregate"] = {
            "passRateDelta": c["pass_rate_delta"],
            "passRateSign": c["pass_rate_sign"],
            "tokensPerPassDelta": c["tokens_per_pass_delta"],
            "tokensPerPassSign": c["tokens_per_pass_sign"],
            "wallclockMsDelta": c["wallclock_ms_delta"],
            "wallclockMsSign": c["wallclock_ms_sign"],
        }
    return result


# ---------------------------------------------------------------- rendering

_GLYPH = {"improve": "▲", "regress": "▼", "flat": "▬"}


def _interval(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or high is None else f"[{signed(low)}, {signed(high)}]"


def verdict(result: dict[str, Any]) -> str:
    """One line per comparison: which arms changed beyond noise."""
    if not result["ok"]:
        return f"refused ({result['reason']}): {result['message']}"
    if not result["arms"]:
        return "no arm ran in both reports: nothing compared"
    parts = []
    for arm, c in result["arms"].items():
        p = c["paired"]
        change = (
            f"{num(c['base']['pass_rate'])} → {num(c['current']['pass_rate'])} "
            f"({signed(p['delta'])} {_interval(p['low'], p['high'])} over {p['tasks']} tasks in both, "
            f"p={_p(p['p_value_holm'])}{' Holm-adjusted' if p['holm_family'] > 1 else ''})"
        )
        if c["beyond_noise"]:
            word = "improved" if (p["delta"] or 0) > 0 else "regressed"
            parts.append(f"{arm} {word} beyond noise: {change}")
        else:
            parts.append(f"{arm} within noise: {change}")
    return "; ".join(parts)


def _p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2g}"


def render_markdown(result: dict[str, Any]) -> str:
    """The comparison as markdown (refusals included)."""
    if not result["ok"]:
        lines = [f"# akm-bench compare — refused ({result['reason']})", "", result["message"]]
        for key in (
            "baseModel",
            "currentModel",
            "baseTaskCorpusHash",
            "currentTaskCorpusHash",
            "baseFixtureContentHash",
            "currentFixtureContentHash",
        ):
            if key in result:
                lines.append(f"- {key}: `{result[key]}`")
        for key, label in (("onlyInCurrent", "only in current"), ("onlyInBase", "only in base")):
            if result.get(key):
                lines.append(f"- {label}: {', '.join(result[key])}")
        if result["warnings"]:
            lines += ["", "## Warnings", ""] + [f"- {w}" for w in result["warnings"]]
        return "\n".join(lines) + "\n"
    model = result["currentModel"] or "<unknown>"
    lines = [f"# akm-bench compare — `{model}`", ""]
    bf, cf = result["baseFixtureContentHash"], result["currentFixtureContentHash"]
    if bf or cf:
        lines += [f"fixture-content hash: base={f'`{bf}`' if bf else 'n/a'}, current={f'`{cf}`' if cf else 'n/a'}", ""]
    lines.append(f"**Verdict:** {verdict(result)}")
    if result["arms"]:
        lines += ["", "## Aggregate (current − base)", ""]
        rows = []
        for arm, c in result["arms"].items():
            p = c["paired"]
            rows.append(
                [
                    arm,
                    num(c["base"]["pass_rate"]),
                    num(c["current"]["pass_rate"]),
                    p["tasks"],
                    signed(p["delta"]),
                    _interval(p["low"], p["high"]),
                    _p(p["p_value_holm"]),
                    _GLYPH[_sign(p["delta"], True, FLAT)],
                    "yes" if c["beyond_noise"] else "no",
                    signed(c["tokens_per_pass_delta"], 0),
                    signed(c["wallclock_ms_delta"], 0),
                ]
            )
        lines.append(
            tabulate(
                rows,
                [
                    "arm",
                    "base",
                    "current",
                    "tasks in both",
                    "delta (same tasks)",
                    "95% CI",
                    "p (Holm)",
                    "dir",
                    "beyond noise",
                    "tokens_per_pass Δ",
                    "wallclock_ms Δ",
                ],
                tablefmt="github",
                disable_numparse=True,
            )
        )
        if "lift" in result:
            lift = result["lift"]
            lines += [
                "",
                f"lift (akm − noakm): base {signed(lift['base'])}, current {signed(lift['current'])}, change {signed(lift['change'])}",
            ]
        lines += ["", f"noise rule — {result['noise_rule']}"]
        for arm, c in result["arms"].items():
            lines += ["", f"## Per-task ({arm} arm)", ""]
            rows = []
            for t in c["perTask"]:
                name = t["id"] if t["presence"] == "both" else f"{t['id']} _({t['presence']})_"
                rows.append(
                    [
                        name,
                        num(t["base_pass_rate"]),
                        num(t["current_pass_rate"]),
                        signed(t["delta"]),
                        _p(t["p_value_holm"]),
                        _GLYPH[t["sign"]],
                        "yes" if t["beyond_noise"] else "",
                    ]
                )
            lines.append(
                tabulate(
                    rows,
                    ["task", "base", "current", "delta", "p (Holm)", "dir", "beyond noise"],
                    tablefmt="github",
                    disable_numparse=True,
                )
            )
    if result["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in result["warnings"]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- CLI


def load_report(path: Path) -> dict[str, Any]:
    """Read a report; ValueError with a one-line message naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not valid JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a report (expected a JSON object)")
    return data


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m pytest_akmbench compare",
        description="Compare two akmbench report.json files (current = HEAD against BASE)",
    )
    p.add_argument("base", metavar="BASE", help="The baseline report.json")
    p.add_argument("head", metavar="HEAD", help="The current report.json")
    p.add_argument("--json", action="store_true", help="Print the comparison as JSON instead of markdown")
    p.add_argument("--allow-corpus-mismatch", action="store_true", help="Diff even if the task corpora differ")
    p.add_argument("--allow-fixture-mismatch", action="store_true", help="Diff even if the fixture stashes differ")
    p.add_argument("--allow-model-mismatch", action="store_true", help="Diff even if the models differ")
    return p


def main(argv: list[str]) -> int:
    """0 compared, 1 refused, 2 usage error or unreadable input."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (or --help)
        return 0 if exc.code in (0, None) else 2
    try:
        base = load_report(Path(args.base))
        head = load_report(Path(args.head))
    except ValueError as err:
        print(f"compare: {err}", file=sys.stderr)
        return 2
    result = compare(
        base,
        head,
        allow_model_mismatch=args.allow_model_mismatch,
        allow_corpus_mismatch=args.allow_corpus_mismatch,
        allow_fixture_mismatch=args.allow_fixture_mismatch,
    )
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if args.json else render_markdown(result))
    if not result["ok"]:
        print(f"compare: refused ({result['reason']}): {result['message']}", file=sys.stderr)
        return 1
    return 0
