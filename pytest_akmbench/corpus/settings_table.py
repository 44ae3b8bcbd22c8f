"""Every setting of a bench run, one row each (docs/configuration.md, "Adding a setting").

A row generates the ``--bench-*`` option and its ini key (``plugin/options.py``), the setting's
place in the resolution and its default (``corpus/config.py``), its run-config field, that field's
checks and JSON Schema (``corpus/config_fields.py``), and the ``report`` command's flag
(``cli/main.py``). Nothing else declares a setting.

The pytest entry point imports this module while a run may not be a bench at all (docs/
architecture.md, "Cheap when inert"): it imports only the value parsers, which import no more
than the standard library and the error types.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..records import ARMS
from . import values as v

TRACKS = ("utility", "attribute", "evolve")
DEFAULT_FLOOR = 3


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting. ``name`` is its option's stem (``--bench-NAME``, ini ``bench_NAME``, with
    ``-`` for ``_``) and, unless ``attr`` says otherwise, its ``Settings`` attribute."""

    name: str
    help: str = ""
    metavar: str | None = None  # None: a flag, true when given
    parse: Callable[[Any], Any] | None = None  # None: read on its own, not a value of Settings
    default: Any = None
    key: str | None = None  # its run-config field
    schema: Mapping[str, Any] | None = None  # that field's JSON Schema
    check: Callable[[Any], Any] | None = None  # that field's value check (ValueError names the fix)
    layered: bool = True  # the field is one layer of the precedence (False: read on its own)
    report: str | None = None  # the report command's --NAME, with this help
    flag: str = ""  # the option, when it is not --bench-NAME
    ini_help: str = ""  # the ini key's help, when it is not the option's
    many: bool = False  # repeatable; the ini key is a list of lines
    path: bool = False  # a path: expanded, relative to where it was given
    attr: str = ""  # the Settings attribute, when it is not name
    owner: str = "bench"  # an agent's name: that agent's own setting, declared in its folder and passed on to it
    provider_source: bool = False  # a run-config field giving the providers: a config gives one at most
    option: bool = True  # False: a run-config field only
    unused: bool = False  # accepted in a run config so it loads, unused by this harness

    @property
    def option_flag(self) -> str:
        return self.flag or "--bench-" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        """The option's dest and the ini key."""
        return "bench_" + self.name

    @property
    def field(self) -> str:
        return self.attr or self.name


def _positive(value: int) -> int:
    if value < 1:
        raise ValueError(f"must be a positive integer, got {value}")
    return value


def _positive_then(parse: Callable[[Any], Any]) -> Callable[[int], Any]:
    """A run-config integer: positive (said as the other positive fields say it), then ``parse``."""
    return lambda value: parse(_positive(value))


def parse_track(raw: Any) -> str:
    if raw not in TRACKS:
        raise ValueError(f"must be one of {', '.join(TRACKS)}, got {raw!r}")
    return str(raw)


def _track_field(value: str) -> str:
    if value not in TRACKS:
        raise ValueError(f"must be one of {', '.join(TRACKS)}, got {json.dumps(value)}")
    return value


def _task_ids(value: str | list[Any]) -> Any:
    if isinstance(value, list) and not all(isinstance(t, str) and t for t in value):
        raise ValueError("every entry must be a task id string")
    return value


def _sandbox_mode(text: str) -> str:
    from ..system.sandbox import parse_mode  # the sandbox loads only when a bench resolves

    return parse_mode(text)


def _network(text: str) -> str:
    from ..system.sandbox import parse_network

    return parse_network(text)


def _paths(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (str(value),)


_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 1}
S = Setting
# fmt: off
ROWS: tuple[Setting, ...] = (
    S("config", "Run config (JSON, schema v1) naming tasks, arms, seeds, budgets, model", "FILE"),
    S("corpus", "Tasks root of the corpus (default: corpus/tasks)", "DIR"),
    S("stashes", "Directory of stash fixtures (default: corpus/stashes)", "DIR"),
    S("tasks", "Task selector: all, train, eval, a domain, a task id, or ids a/b,c/d", "SEL", v.parse_tasks,
      key="tasks", layered=False, check=_task_ids, report="task selector, as --bench-tasks",
      schema={"description": "a selector (all, train, eval, a domain, a task id, or ids a/b,c/d) or a list of task ids",
              "oneOf": [_STR, {"type": "array", "items": {"type": "string", "minLength": 1}}]}),
    S("arms", f"Comma-separated arms out of {', '.join(ARMS)} (default: noakm,akm)", "LIST", v.parse_arms,
      ("noakm", "akm"), "arms", {"type": "array", "minItems": 1, "uniqueItems": True, "items": {"enum": list(ARMS)}},
      v.parse_arms, report="arms, as --bench-arms"),
    S("seeds", "Trials per task and arm, numbered 1..N (default: 3)", "N", v.seed_count, 3, "seeds",
      {**_INT, "maximum": v.MAX_SEEDS}, _positive_then(v.seed_count), report="seeds per cell, as --bench-seeds"),
    S("agent", "Agent adapter: opencode (default), oracle, nop or one a plugin registers", "NAME", str, "opencode",
      "agent", {**_STR, "description": "opencode (default), oracle, nop, or one a plugin registers"},
      report="agent name (default: from the config, else opencode)"),
    S("model", "Model as provider/model, e.g. scripted/oracle", "MODEL", str, key="model", layered=False,
      schema={**_STR, "description": "the run's model, provider/model"}, report="model (default: the latest sample's)"),
    S("providers", "Providers file of the agent's model (schemaVersion 1, providers, defaultModel)", "FILE", str,
      path=True),
    S("budget_tokens", "Token budget per cell: caps every task's own; used where a task declares none (default: 30000)", "N",
      v.budget_tokens, 30000, "budgetTokens", {**_INT, "maximum": v.MAX_BUDGET_TOKENS},
      _positive_then(v.budget_tokens), report="as --bench-budget-tokens"),
    S("budget_wall_ms", "Wall-clock budget per cell: caps every task's own; used where a task declares none (default: 120000)", "MS",
      v.budget_wall_ms, 120000, "budgetWallMs", {**_INT, "maximum": v.MAX_BUDGET_WALL_MS, "description": "at most 7 days"},
      _positive_then(v.budget_wall_ms), report="as --bench-budget-wall-ms"),
    S("budget_turns", "Model turns allowed per cell (default: unlimited)", "N", v.budget_turns, None, "budgetTurns",
      {**_INT, "maximum": v.MAX_BUDGET_TURNS}, _positive_then(v.budget_turns)),
    S("budget_usd", "Spend cap of the whole run in US dollars: once reached, no new cell starts", "USD", v.usd_cap,
      None, "budgetUsd", {"type": "number", "exclusiveMinimum": 0, "description": "spend cap of the run in US dollars"},
      v.usd_cap, report="as --bench-budget-usd, for a run that left no record in the store"),
    S("budget_run_tokens", "Spend cap of the whole run in tokens: once reached, no new cell starts", "N", v.token_cap,
      None, "budgetRunTokens", {**_INT, "description": "spend cap of the run in tokens"}, v.token_cap,
      report="as --bench-budget-run-tokens, likewise"),
    S("verify_timeout", "Timeout of one verifier run (default: 120)", "SECONDS", v.verify_timeout, 120.0),
    S("floor", "Valid samples a cell needs to count as covered in the report (default: 3)", "N", v.positive_int,
      DEFAULT_FLOOR, "floor",
      {**_INT, "description": "the reporting floor, and an adaptive run's first round (default 3)"}, v.positive_int,
      report=f"reporting floor (default: the run config's floor, else {DEFAULT_FLOOR})"),
    S("store", "Sample store directory (default: .akmbench/store)", "DIR", str, path=True),
    S("report", "Where report.json and summary.md go (default: .akmbench/report)", "DIR", str, path=True),
    S("tmp", "Root of the per-cell run dirs (default: ~/.cache/bench-cells)", "DIR", str, path=True),
    S("akm", "The akm executable given to the akm arm", "PATH", str, None, "akm",
      {**_STR, "description": "the akm executable"}, path=True),
    S("baseline", "Baseline pass rates {task_id: rate}: adds the vs-base column to the summary", "FILE", str, None,
      "baseline", {**_STR, "description": "a file of baseline pass rates {task_id: rate}"}, path=True),
    S("shard", "Run only shard K of N of the selected cells, balanced by their walls in the store (CI matrix)", "K/N",
      str),
    S("sandbox", "Sandbox of each cell's agent: auto (bwrap when it works, else none with a warning; the default), "
      "bwrap, or none", "MODE", _sandbox_mode, "auto"),
    S("network", "Network of a sandboxed agent: isolated (the default: its model only) or host (the machine's "
      "network, for tasks that need it; recorded in the fingerprint)", "MODE", _network, "isolated"),
    S("track", "Track: utility (the default), attribute (needs --bench-base) or evolve (docs/tracks.md)", "NAME",
      parse_track, "utility", "track",
      {"enum": list(TRACKS), "description": "attribute needs base; evolve is refused at run time"}, _track_field),
    S("base", "Attribute track: the utility report.json whose akm runs are masked asset by asset", "FILE", str, None,
      "base", {**_STR, "description": "attribute track: the utility report.json whose akm runs are masked asset by "
               "asset"}, path=True),
    S("top", "Attribute track: mask the N most loaded assets of the base (default: 5)", "N", v.positive_int, 5),
    S("evolve_episodes", "Evolve track: N episodes of train, proposals, post, each on the last one's stash "
      "(default: 1)", "N", v.positive_int, 1, "evolveEpisodes",
      {**_INT, "description": "the evolve track's episodes (default 1)"}, _positive),
    S("force_parallel", "Allow --parallel above 4 without a warning", None, v.parse_bool, False, "forceParallel",
      {"type": "boolean"}),
    S("keep_runs", "Keep each cell's run dir after it ends, for debugging", None, v.parse_bool, False),
    S("fresh", "Run every selected cell again even if the store has its sample (still appends)", None, v.parse_bool,
      False),
    S("soundness", "Check the corpus instead of running an agent: one item per task proving that the untouched "
      "workspace fails, the solution passes and the verifier repeats itself", None, v.parse_bool, False),
    S("gate", "Gate deciding the exit status, e.g. akm.pass_rate>=0.6, lift.low>0, no-regression:BASE/report.json "
      "(repeatable)", "EXPR", tuple, (), many=True, attr="gates", ini_help="Gates deciding the exit status, one per "
      "line", report="a gate deciding the exit status, as --bench-gate (repeatable)"),
    S("sandbox_ro", "A file or directory the sandboxed agent may also read (repeatable)", "PATH", _paths, (),
      many=True, path=True, ini_help="Files or directories the sandboxed agent may also read, one per line"),
    S("parallel", "Run cells in N processes (pytest-xdist -n, clamped to 1..8)", "N", v.parallel_count, None,
      "parallel", _INT, _positive, flag="--parallel", ini_help="Default for --parallel"),
    S("evolve_llm", "evolve track: akm's own LLM, scripted/lesson, scripted/garbage or a chat-completions URL", "LLM",
      str),
    S("until", "decisive: run the floor's seeds, then one more seed of every task per round until the akm - noakm "
      "test is decisive, futile or --bench-max-seeds is reached", "WHEN", v.until_choice, None, "until",
      {"enum": ["decisive"], "description": "adaptive seeds: one more seed of every task per round until the akm - "
       "noakm test is decisive"}, v.until_choice, report="as --bench-until, for a run that left no record in the store"),
    S("max_seeds", "With --bench-until: the most seeds a task runs (default: 5)", "N", v.seeds_most, None, "maxSeeds",
      {**_INT, "maximum": v.MAX_SEEDS, "description": "the most seeds of an adaptive run (default 5)"}, v.seeds_most,
      report="as --bench-max-seeds, with --until"),
    # Run-config fields that are no option: the file's own, and the providers every agent reads.
    S("$schema", key="$schema", schema=_STR, option=False),
    S("schemaVersion", key="schemaVersion", schema={"const": 1}, option=False),
    S("name", key="name", schema={**_STR, "description": "labels the report"}, option=False),
    S("description", key="description", schema=_STR, option=False),
    S("providers_inline", key="providers", option=False, provider_source=True, schema={"type": "object",
      "description": "providers inline, in the providers file's shape (see providers.schema.json)"}),
    S("providersRef", key="providersRef", schema={**_STR, "description": "a providers file"}, option=False,
      provider_source=True),
    S("defaultModel", key="defaultModel", schema=_STR, option=False),
    # The standalone akm-bench's evolve settings: its configs load unchanged, with a warning that
    # names them unused (README, "Run configs").
    S("phase2Enabled", key="phase2Enabled", schema={"type": "boolean"}, option=False, unused=True),
    S("phase2ReflectTimeoutMs", key="phase2ReflectTimeoutMs", schema=_INT, check=_positive, option=False, unused=True),
    S("phase2ReflectRetryTimeoutMs", key="phase2ReflectRetryTimeoutMs", schema=_INT, check=_positive, option=False,
      unused=True),
    S("phase2SkipReflectOnAllNegative", key="phase2SkipReflectOnAllNegative", schema={"type": "boolean"},
      option=False, unused=True),
)
# fmt: on
del S


class Table:
    """The settings of a bench run: the rows above, then each built-in agent's own rows (its
    folder declares them; ``agents/settings.py`` assembles the whole table, since this package
    sits below the agents). Everything a row generates is made from one of these."""

    def __init__(self, rows: tuple[Setting, ...] = ROWS) -> None:
        self.rows = rows
        self.options = tuple(row for row in rows if row.option)
        self.resolved = tuple(row for row in rows if row.option and row.parse is not None)
        self.fields = tuple(row for row in rows if row.key is not None)
        self.report = tuple(row for row in rows if row.report is not None)
        self.by_name: Mapping[str, Setting] = {row.name: row for row in rows}
        # One source of provider entries per run config.
        self.provider_fields = tuple(str(row.key) for row in self.fields if row.provider_source)
        self.phase2_fields = tuple(str(row.key) for row in self.fields if row.unused)

    def with_rows(self, rows: tuple[Setting, ...]) -> Table:
        """This table and ``rows`` (an agent's), each name and run-config field once."""
        taken = {row.name for row in self.rows} | {row.key for row in self.fields}
        clash = [row.name for row in rows if row.name in taken or (row.key is not None and row.key in taken)]
        if clash:
            raise ValueError(f"settings {', '.join(clash)}: declared twice")
        return Table((*self.rows, *rows))


CORE = Table()
DEFAULTS: Mapping[str, Any] = {row.field: row.default for row in CORE.resolved}
PHASE2_FIELDS = CORE.phase2_fields


def default(name: str) -> Any:
    """The default of a ``Settings`` attribute (its class declares it with this)."""
    return DEFAULTS[name]
