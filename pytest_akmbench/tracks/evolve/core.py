"""The evolve track: does feedback make the stash better? (docs/tracks.md, "evolve").

Per domain of the selection, its tasks split by slice into train and eval, the run is:

* ``pre``: the eval cells on the untouched stash;
* ``train``: the train cells on the untouched stash (the akm arm);
* the **proposal step** (one item per domain): the harness gives akm one feedback per valid
  train run (positive for a pass, else negative) on an evolving copy of the stash, generates
  proposals for every gold ref over the threshold (akm 0.7: ``distill``), accepts the
  lint-clean ones, re-indexes, and publishes the evolved stash;
* ``post``: the eval cells on the evolved stash; ``control``: the same eval cells again on the
  untouched stash (a no-evolve control: post - pre is not drift); ``synthetic``: the eval cells
  on the synthetic arm (the agent's own notes, no stash).

A cell's sample is stored like a utility cell's, under the arm it ran as (akm, or synthetic for
the synthetic condition: records.Sample's contract), its ``condition`` and ``episode`` fields
saying which of the track's cells it is (a store written before them said it in the arm,
``evolve-<condition>``, and is still read), and its fingerprint naming the condition and the content hash of the stash it ran on, so a resumed run
reruns nothing finished, and a post cell reruns only when the evolved stash changed. The
proposal step is resumed by its input fingerprint (the train samples it read and what it ran
with). Eval cells always run on throwaway stash copies: their feedback never reaches the
evolving stash (leakage is checked against akm's own log). Pure: no pytest.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cell import akm
from ...cell.rundir import index_stash
from ...corpus.hashes import fixture_hash
from ...corpus.tasks import Task
from ...errors import ConfigError, CorpusError
from ...records import Sample
from ...scripted import AKM_LLM_POLICIES, ScriptedModel
from ...store import atomic
from ...store.samples import fingerprint_hash
from ...system import procs
from ...system.procs import ProcessTracker
from . import akm as evolve_akm
from .akm import AkmRunner

EVAL_CONDITIONS = ("pre", "post", "control", "synthetic")
# Collection order: pre and train first, the step after train, the rest after the step.
RANK = {"pre": 0, "train": 1, "propose": 2, "post": 3, "control": 4, "synthetic": 5}
NEGATIVE_COUNT = 2  # a gold ref is evolved once it has this many negative signals...
NEGATIVE_RATIO = 0.5  # ...or more than this share of negative ones
STEP_SCHEMA = 2  # 2: the proposal log names each proposal's verb


def arm_label(condition: str, episode: int = 1) -> str:
    """A condition's name in the envelope's comparisons, and the arm its samples carried in a
    store written before samples had a ``condition`` field."""
    return f"evolve-{episode_label(condition, episode)}"


def mark(sample: Sample, condition: str, episode: int, fingerprint: dict[str, Any]) -> Sample:
    """An evolve cell's sample: which of the track's cells it is, beside the arm it ran as, and
    the track's fingerprint of the cell."""
    marked: Sample = {**sample, "condition": condition, "episode": episode}
    marked["fingerprint"], marked["fingerprint_hash"] = fingerprint, fingerprint_hash(fingerprint)
    return marked


def condition_of(sample: Mapping[str, Any]) -> str:
    """The condition a sample is grouped under in the envelope (``post``, ``post-e2``...): from
    its ``condition`` and ``episode``, or from an older store's ``evolve-<condition>`` arm."""
    condition, episode = sample.get("condition"), sample.get("episode")
    if isinstance(condition, str):
        return episode_label(condition, episode if type(episode) is int else 1)
    return str(sample["arm"]).removeprefix("evolve-")


def episode_label(condition: str, episode: int) -> str:
    """A condition in an episode: episode 1 keeps the bare name (a one-episode run's items,
    samples and reports are those of a run before episodes existed), a later one adds ``-eN``."""
    return condition if episode <= 1 else f"{condition}-e{episode}"


def run_arm(condition: str) -> str:
    """The utility arm a condition's cell runs as: synthetic writes its own notes, the rest use akm."""
    return "synthetic" if condition == "synthetic" else "akm"


@dataclass(frozen=True, slots=True)
class DomainPlan:
    """One domain's evolve run: its train and eval tasks."""

    domain: str
    train: tuple[Task, ...]
    eval: tuple[Task, ...]

    @property
    def fixtures(self) -> list[str]:
        return sorted({t.stash for t in (*self.train, *self.eval)})

    @property
    def eval_gold_refs(self) -> list[str]:
        return sorted({t.gold_ref for t in self.eval if t.gold_ref})


def plan(tasks: Iterable[Task]) -> list[DomainPlan]:
    """The selection split per domain by slice; a domain missing a side cannot evolve."""
    by_domain: dict[str, list[Task]] = {}
    for task in tasks:
        by_domain.setdefault(task.domain, []).append(task)
    plans = []
    for domain, items in sorted(by_domain.items()):
        train = tuple(sorted((t for t in items if t.slice == "train"), key=lambda t: t.id))
        evals = tuple(sorted((t for t in items if t.slice == "eval"), key=lambda t: t.id))
        for side, got in (("train", train), ("eval", evals)):
            if not got:
                raise CorpusError(
                    f"evolve: domain {domain!r} has no {side}-slice task in the selection; select some "
                    f"(--bench-tasks) or give tasks `slice: {side}` in their task.yaml (docs/corpus.md)"
                )
        plans.append(DomainPlan(domain, train, evals))
    return plans


def llm_spec(value: str | None, model: str | None) -> str:
    """akm's own LLM: ``scripted/lesson`` or ``scripted/garbage`` (the scripted model), or an
    OpenAI-compatible chat-completions URL; by default the scripted lesson writer when the agent
    runs on the scripted model, else it must be given."""
    if value is None:
        if model and model.startswith("scripted/"):
            return "scripted/lesson"
        raise ConfigError(
            "--bench-evolve-llm: the evolve track needs an LLM for akm's proposals; give a chat-completions "
            "URL (http://host:port/v1/chat/completions) or scripted/lesson",
            usage=True,
        )
    policy = value.removeprefix("scripted/")
    if value.startswith("scripted/") and policy in AKM_LLM_POLICIES:
        return value
    if value.startswith(("http://", "https://")):
        return value
    choices = ", ".join(f"scripted/{p}" for p in AKM_LLM_POLICIES)
    raise ConfigError(f"--bench-evolve-llm: {value!r} is neither {choices} nor an http(s) URL", usage=True)


@contextmanager
def llm_endpoint(spec: str) -> Iterator[str]:
    """The chat-completions URL akm calls; a scripted one is served for the step's duration."""
    if not spec.startswith("scripted/"):
        yield spec
        return
    with ScriptedModel() as server:
        url = server.register("akm-llm", spec.removeprefix("scripted/"))
        yield f"{url}/chat/completions"


def step_input(
    plan: DomainPlan, samples: list[dict[str, Any]], info: akm.AkmInfo, llm: str, stashes_root: Path
) -> dict[str, Any]:
    """Everything the proposal step's result depends on: its resume fingerprint."""
    return {
        "domain": plan.domain,
        "fixtures": {f: fixture_hash(stashes_root / f) for f in plan.fixtures},
        "akm": {"version": info.version, "sha256": info.sha256},
        "llm": llm,
        "thresholds": {"negative_count": NEGATIVE_COUNT, "negative_ratio": NEGATIVE_RATIO},
        "train": sorted(
            [s["task_id"], s["seed"], s["outcome"], s["fingerprint_hash"], s["started_at"]] for s in samples
        ),
    }


def step_dir(store_dir: Path, domain: str, inputs: dict[str, Any]) -> Path:
    return store_dir / "evolve" / domain / fingerprint_hash(inputs)[:16]


def load_step(directory: Path) -> dict[str, Any] | None:
    """A finished step's record, or None (never run, or cut short)."""
    try:
        data = json.loads((directory / "step.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == STEP_SCHEMA else None


def crossing(counts: dict[str, dict[str, int]]) -> list[str]:
    """The refs whose negative signals cross the threshold (count, or a strict majority share)."""
    out = []
    for ref, c in counts.items():
        total = c["positive"] + c["negative"]
        if c["negative"] >= NEGATIVE_COUNT or (total and c["negative"] / total > NEGATIVE_RATIO):
            out.append(ref)
    return sorted(out)


def run_step(
    plan: DomainPlan,
    samples: list[dict[str, Any]],
    inputs: dict[str, Any],
    *,
    info: akm.AkmInfo,
    stashes_root: Path,
    directory: Path,
    llm_url: str,
    procs: ProcessTracker,
    episode: int = 1,
) -> dict[str, Any]:
    """Feedback, proposals, accept, re-index for each of the domain's stash fixtures (as
    ``stashes_root`` holds them: the corpus's, or the previous episode's evolved ones); the
    evolved stashes land in ``directory/evolved`` and the record in ``directory/step.json``."""
    shutil.rmtree(directory, ignore_errors=True)  # a step cut short starts over
    directory.mkdir(parents=True)
    tasks = {t.id: t for t in plan.train}
    record: dict[str, Any] = {
        "schema": STEP_SCHEMA,
        "domain": plan.domain,
        "episode": episode,
        "input": inputs,
        "fixtures": {},
    }
    for fixture in plan.fixtures:
        mine = [s for s in samples if s["task_id"] in tasks and tasks[s["task_id"]].stash == fixture]
        runner = _runner(info, stashes_root / fixture, directory / "work" / fixture, llm_url, procs)
        part = _evolve_fixture(runner, mine, tasks, plan.eval_gold_refs)
        published = directory / "evolved" / fixture
        shutil.copytree(runner.cwd, published, ignore=shutil.ignore_patterns(".akm"), symlinks=True)
        part["evolved_stash_hash"] = fixture_hash(published)
        part["original_stash_hash"] = inputs["fixtures"][fixture]
        record["fixtures"][fixture] = part
    atomic.write_text(directory / "step.json", json.dumps(record, indent=2, sort_keys=True))
    return record


def _runner(info: akm.AkmInfo, fixture: Path, work: Path, llm_url: str, procs: ProcessTracker) -> AkmRunner:
    """A private copy of the fixture and a private akm home; the LLM is named only in the
    config the proposal verbs read, so ``akm index`` never calls it."""
    stash = work / "stash"
    shutil.copytree(fixture, stash, symlinks=True)
    env = akm.cell_env(info, stash, akm.private_env(work / "home"))
    akm.write_config(info, env)
    llm_env = dict(env, XDG_CONFIG_HOME=str(work / "llm-config"))
    config = {**json.loads(info.config), **llm_config(info, llm_url)}
    (work / "llm-config" / "akm").mkdir(parents=True)
    (work / "llm-config" / "akm" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return AkmRunner(info=info, env=env, llm_env=llm_env, cwd=stash, procs=procs)


def llm_config(info: akm.AkmInfo, llm_url: str) -> dict[str, Any]:
    """The akm config keys that send akm's proposal prompts to ``llm_url``. akm 0.9: an LLM
    engine, the default one. akm 0.7: ``llm`` for distill, and for reflect (which runs an agent
    CLI, the prompt as its last argument, the proposal JSON on its stdout) the harness's bridge
    that sends the prompt to the same URL (tracks/evolve/agent.py); it passes on the process
    marker, so a bridge akm leaves behind is still swept with the step."""
    if info.line != "0.7":
        engine = {"kind": "llm", "endpoint": llm_url, "model": "akm-proposals", "timeoutMs": 120_000}
        return {"engines": {"akmbench": engine}, "defaults": {"llmEngine": "akmbench"}}
    bridge = {
        "bin": sys.executable,
        "args": ["-m", "pytest_akmbench.tracks.evolve.agent", llm_url],
        "stdio": "captured",
        "parseOutput": "text",
        "envPassthrough": ["HOME", "PATH", "LANG", "TMPDIR", procs.MARKER],
        "timeoutMs": 120_000,
    }
    return {
        "llm": {"endpoint": llm_url, "model": "akm-proposals", "features": {"feedback_distillation": True}},
        "agent": {"default": "akmbench", "profiles": {"akmbench": bridge}},
    }


def _evolve_fixture(
    runner: AkmRunner, samples: list[dict[str, Any]], tasks: dict[str, Task], eval_refs: list[str]
) -> dict[str, Any]:
    index_stash(runner.info, runner.cwd, runner.env, runner.procs)
    log: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    for s in sorted(samples, key=lambda s: (s["task_id"], s["seed"])):
        gold = tasks[s["task_id"]].gold_ref
        if not gold:
            continue
        signal = "positive" if s["outcome"] == "pass" else "negative"
        ok, said = evolve_akm.feedback(runner, gold, signal)
        agent = (s.get("trajectory") or {}).get("feedback_polarity")
        log.append(
            {
                "task_id": s["task_id"],
                "seed": s["seed"],
                "gold_ref": gold,
                "signal": signal,
                "ok": ok,
                "outcome": s["outcome"],
                "agent_signal": agent,
                **({} if ok else {"error": said}),
            }
        )
        c = counts.setdefault(gold, {"positive": 0, "negative": 0})
        c[signal] += 1
    refs = crossing(counts)
    found, generated, warnings = _generate(runner, refs)
    by_id = {g["proposal_id"]: g["verb"] for g in generated if g.get("proposal_id")}
    decisions = [
        evolve_akm.decide(runner, {**p, "verb": by_id.get(p["id"]) or _verb_of(p, found)})
        for p in evolve_akm.list_proposals(runner)
    ]
    index_stash(runner.info, runner.cwd, runner.env, runner.procs)
    return {
        "verbs": found,
        "feedback": log,
        "counts": counts,
        "evolved_refs": refs,
        "generation": generated,
        "proposals": decisions,
        "leakage": _leakage(runner, log, eval_refs),
        "warnings": warnings,
    }


def _generate(runner: AkmRunner, refs: list[str]) -> tuple[dict[str, bool], list[dict[str, Any]], list[str]]:
    """The proposal verbs the installed akm offers, and their run on each evolved ref: akm 0.9's
    ``improve``; akm 0.7's ``distill`` (a lesson) and ``reflect`` (a revision), both on every
    ref over the threshold, as the reference's phase 2 does."""
    found = evolve_akm.verbs(runner)
    generated: list[dict[str, Any]] = []
    if not found["proposal"] or not (found["improve"] or found["distill"] or found["reflect"]):
        offers = ", ".join(v for v, ok in found.items() if ok) or "none"
        warning = f"akm {runner.info.version} has no proposal verbs (it offers: {offers}); no proposal was generated"
        return found, generated, [warning] if refs else []
    for ref in refs:
        if found["improve"]:
            generated.append(evolve_akm.improve(runner, ref))
            continue
        if found["distill"]:
            generated.append(evolve_akm.distill(runner, ref))
        if found["reflect"]:
            generated.append(evolve_akm.reflect(runner, ref))
    return found, generated, []


def _verb_of(proposal: dict[str, Any], found: dict[str, bool]) -> str | None:
    """The verb behind a proposal no generation record names (one queued before the step)."""
    if found["improve"]:
        return "improve"
    return {"lesson": "distill", "revision": "reflect"}.get(proposal["kind"])


def _leakage(runner: AkmRunner, log: list[dict[str, Any]], eval_refs: list[str]) -> dict[str, Any]:
    """Eval-slice runs must never feed proposal generation: every feedback event in the evolving
    stash's akm log must be one the harness dispatched from a train run."""
    events = evolve_akm.feedback_events(runner)
    dispatched = sum(1 for e in log if e["ok"])
    logged = None if events is None else len(events)
    return {
        "eval_gold_refs": eval_refs,
        "eval_runs_feeding": 0 if logged == dispatched else None,
        "feedback_events": logged,
        "dispatched_from_train": dispatched,
        "ok": logged == dispatched,
    }
