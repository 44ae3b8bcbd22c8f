"""What the offline ``report`` takes from the samples (docs/report.md, "Rebuilding offline").

The command ran no agent, no akm and no sandbox, so the facts a fingerprint holds about the run
(agent version, model, providers, sandbox, network, each arm's prompt version, the akm
the akm arm ran, each task's budget) are read from the samples of the cells it reports, the
newest of each; only the task's own content comes from the corpus, and the cell boundary's
version from the code (a pass under an older boundary could have been forged). Two akms among
the akm arm's samples are refused: a report compares one akm. The cells of the reported runs that the report
leaves out are named, so that no arm is dropped without a word.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from ..cell.context import FROM_TASK, PER_ARM, Recorded
from ..errors import ConfigError
from ..records import ARMS, CellKey, Sample, of_a_track
from ..store.samples import Line, as_sample


def _start(record: Mapping[str, Any]) -> str:
    started = record.get("started_at")
    return started if isinstance(started, str) else ""


def _newest(records: Iterable[Sample]) -> Sample | None:
    found = None
    for record in records:  # the later of two equal start times, as the stores' order has it
        if found is None or _start(record) >= _start(found):
            found = record
    return found


def _akm(record: Mapping[str, Any]) -> tuple[str, str]:
    tool = record["fingerprint"].get("akm") or {}
    return str(tool.get("version")), str(tool.get("sha256"))


def samples_of(records: Iterable[Line], agent: str, tasks: Collection[str]) -> list[Sample]:
    """The samples of ``agent`` for ``tasks`` that a report can read (this sample schema, a fingerprint)."""
    return [
        r
        for r in map(as_sample, records)
        if r is not None
        and (r.get("agent") or {}).get("name") == agent
        and r.get("task_id") in tasks
        and isinstance(r.get("fingerprint"), dict)
        and not of_a_track(r)
    ]


def facts(
    samples: list[Sample],
    arms: Iterable[str],
    *,
    run_id: str | None = None,
    akm_version: str | None = None,
    given: Mapping[str, Any] | None = None,
    budgets: bool = True,
) -> Recorded:
    """The run-level facts of the report's fingerprints from ``samples`` (in the stores' order):
    of run ``run_id`` when it has samples of an arm, else the newest. ``given`` (the command's
    ``--agent-version``, ``--model``) wins over the samples; ``budgets`` False keeps the
    command's own budgets."""
    by_arm: dict[str, list[Sample]] = {}
    for arm in arms:
        own = [r for r in samples if r.get("arm") == arm]
        if run_id is not None and any(r.get("run_id") == run_id for r in own):
            own = [r for r in own if r.get("run_id") == run_id]
        by_arm[arm] = own
    if "akm" in by_arm:
        by_arm["akm"] = one_akm(by_arm["akm"], akm_version)
    used = [r for own in by_arm.values() for r in own]
    newest = _newest(sorted(used, key=_start))
    shared = {
        k: v for k, v in (newest.get("fingerprint", {}) if newest else {}).items() if k not in FROM_TASK | PER_ARM
    }
    if shared:
        shared.update({k: v for k, v in (given or {}).items() if v is not None})
    per_arm = {}
    for arm, own in by_arm.items():
        last = _newest(own)
        if last is not None:
            per_arm[arm] = {k: v for k, v in last["fingerprint"].items() if k in PER_ARM}
    by_task: dict[str, dict[str, Any]] = {}
    for record in sorted(used, key=_start) if budgets else ():
        if isinstance(record["fingerprint"].get("budget"), dict):
            by_task[str(record["task_id"])] = record["fingerprint"]["budget"]
    return Recorded(shared, per_arm, by_task)


def one_akm(samples: list[Sample], version: str | None) -> list[Sample]:
    """The akm arm's samples of the one akm the report counts: ``version`` when given; refused
    when they ran more than one and none is given (the newest is not a choice: the older akm's
    cells would drop out of the comparison)."""
    ran: dict[tuple[str, str], set[tuple[str, Any]]] = {}
    for r in samples:
        ran.setdefault(_akm(r), set()).add((str(r["task_id"]), r.get("seed")))
    if version is not None:
        if samples and not any(v == version for v, _ in ran):
            raise ConfigError(
                f"--akm-version {version}: no akm-arm sample ran akm {version}; they ran {_listed(ran)}", usage=True
            )
        samples = [r for r in samples if _akm(r)[0] == version]
        ran = {k: v for k, v in ran.items() if k[0] == version}
    if len(ran) <= 1:
        return samples
    newest = _akm(_newest(samples) or {"fingerprint": {}})[0]
    # One version built twice is told apart by the run only.
    choice = f"--akm-version {newest} (or another) or --run-id" if len({v for v, _ in ran}) > 1 else "--run-id"
    raise ConfigError(
        f"the akm arm's samples ran {len(ran)} different akms ({_listed(ran)}) and a report counts one: give "
        f"{choice} to say which, or report the stores apart",
        usage=True,
    )


def _listed(ran: Mapping[tuple[str, str], set[tuple[str, Any]]]) -> str:
    versions = [v for v, _ in ran]
    return ", ".join(
        f"akm {v}{f' (sha256 {sha[:12]})' if versions.count(v) > 1 else ''}: {_cells(len(cells))}"
        for (v, sha), cells in sorted(ran.items())
    )


def _cells(n: int) -> str:
    return f"{n} cell{'s' if n != 1 else ''}"


def left_out(
    samples: list[Sample],
    runs: Collection[str],
    cells: Collection[CellKey],
    explicit: Collection[str],
    *,
    seeds: int,
) -> list[str]:
    """The cells the reported runs stored that the report leaves out, one line naming them by
    arm, task or seed, unless the command chose that itself (``explicit``: "tasks", "arms",
    "seeds" given as options)."""
    tasks, arms = {c[0] for c in cells}, {c[1] for c in cells}
    out: dict[CellKey, list[str]] = {}
    for r in samples:
        seed = r.get("seed")
        cell = (str(r["task_id"]), str(r.get("arm")), seed if type(seed) is int else 0)
        if r.get("run_id") not in runs or cell in cells:
            continue
        why = [
            dim
            for dim, ok in (("arms", cell[1] in arms), ("tasks", cell[0] in tasks), ("seeds", 1 <= cell[2] <= seeds))
            if not ok
        ]
        if why and not set(why) & set(explicit):
            out[cell] = why
    if not out:
        return []
    parts = [f"arm {a}: {sum(1 for c in out if c[1] == a)}" for a in sorted({c[1] for c in out if c[1] not in arms})]
    parts += [f"{n} of tasks not selected" for n in [sum(1 for w in out.values() if "tasks" in w)] if n]
    parts += [f"{n} of seeds over {seeds}" for n in [sum(1 for w in out.values() if "seeds" in w)] if n]
    shown = ", ".join(f"{t}::{a}-s{n}" for t, a, n in sorted(out)[:3]) + (" …" if len(out) > 3 else "")
    dims = {d for w in out.values() for d in w}
    every = {*arms, *(c[1] for c in out)}
    options = [
        f"--arms {','.join(a for a in ARMS if a in every)}" if "arms" in dims else "",
        "--tasks" if "tasks" in dims else "",
        f"--seeds {max(c[2] for c in out)}" if "seeds" in dims else "",
    ]
    return [
        f"left out of this report: {_cells(len(out))} the reported run(s) stored ({'; '.join(parts)}: {shown}); "
        f"give {' '.join(o for o in options if o)} to report them (or the options that leave them out, to do so "
        "knowingly)"
    ]
