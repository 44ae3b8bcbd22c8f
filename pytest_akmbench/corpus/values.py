"""Plain value parsers of the settings and run configs (raising ValueError, shared by the pytest
options, ini keys and the CLI), the limits of one run, and the baseline file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..records import ARMS

PARALLEL_MAX = 8
PARALLEL_WARN = 4
# Beyond these a run is a typo, not a benchmark: 10^8 seeds took 2.9 GB just to collect.
MAX_SEEDS = 1000
MAX_CELLS = 200_000
# A budget past these is a typo, not a benchmark (docs/corpus.md, "Budgets"). The wall budget and
# the verify timeout also bound a timer's wait, which must stay far below what a thread can wait
# (threading.TIMEOUT_MAX, about 292 years): wallMs 1e23 crashed the cell's timer thread.
MAX_BUDGET_TOKENS = 10**12
MAX_BUDGET_WALL_MS = 7 * 24 * 3600 * 1000  # 7 days
MAX_BUDGET_TURNS = 100_000
MAX_VERIFY_TIMEOUT_S = 7 * 24 * 3600
BUDGET_LIMITS = {"tokens": (MAX_BUDGET_TOKENS, "tokens"), "wallMs": (MAX_BUDGET_WALL_MS, "ms (7 days)")}


def positive_int(text: str | int) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise ValueError(f"expected a positive integer, got {text!r}")
    return value


def _at_most(value: int, most: int, unit: str) -> int:
    if value > most:
        raise ValueError(f"{value} is more than a budget can be: at most {most} {unit}")
    return value


def budget_tokens(text: str | int) -> int:
    """A run's token budget per cell: a whole number from 1 to ``MAX_BUDGET_TOKENS``."""
    return _at_most(positive_int(text), MAX_BUDGET_TOKENS, "tokens")


def budget_wall_ms(text: str | int) -> int:
    """A run's wall budget per cell in ms: a whole number from 1 to ``MAX_BUDGET_WALL_MS`` (7 days)."""
    return _at_most(positive_int(text), MAX_BUDGET_WALL_MS, "ms (7 days)")


def budget_turns(text: str | int) -> int:
    """A run's turn budget per cell: a whole number from 1 to ``MAX_BUDGET_TURNS``."""
    return _at_most(positive_int(text), MAX_BUDGET_TURNS, "turns")


def verify_timeout(text: str | float) -> float:
    """One verifier run's timeout in seconds: positive, finite, at most 7 days."""
    value = positive_float(text)
    if not value <= MAX_VERIFY_TIMEOUT_S:  # also inf and nan
        raise ValueError(f"expected a number of seconds from 0 to {MAX_VERIFY_TIMEOUT_S} (7 days), got {text!r}")
    return value


def seed_count(text: str | int) -> int:
    value = positive_int(text)
    if value > MAX_SEEDS:
        raise ValueError(f"{value} seeds is too many: at most {MAX_SEEDS} trials per cell")
    return value


def check_matrix(tasks: int, arms: int, seeds: int) -> None:
    """Refuse a selection whose cells could not be collected in reasonable memory."""
    cells = tasks * arms * seeds
    if cells > MAX_CELLS:
        raise ConfigError(
            f"{tasks} tasks x {arms} arms x {seeds} seeds = {cells} cells is more than the {MAX_CELLS} one run "
            "can hold; select fewer tasks or seeds"
        )


def positive_float(text: str | float) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"expected a positive number, got {text!r}") from None
    if not value > 0:
        raise ValueError(f"expected a positive number, got {text!r}")
    return value


def until_choice(text: str) -> str:
    """``--bench-until``'s one value (docs/adaptive.md)."""
    if str(text).strip() != "decisive":
        raise ValueError(f"unknown value {text!r}; the one choice is decisive")
    return "decisive"


def seeds_most(text: str | int) -> int:
    """``--bench-max-seeds``: the most seeds an adaptive run gives a task."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_SEEDS:
        raise ValueError(f"{text!r} is not a whole number of seeds of at least 1 (at most {MAX_SEEDS})")
    return value


def usd_cap(text: str | float) -> float:
    """A run's spend cap in US dollars: positive and finite."""
    try:
        value = float(str(text).strip())
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{text!r} is not a positive number of US dollars, e.g. 2.50; set it to the run's spend limit")
    return value


def token_cap(text: str | int) -> int:
    """A run's spend cap in tokens: a positive whole number."""
    try:
        value = int(str(text).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(
            f"{text!r} is not a positive whole number of tokens, e.g. 200000; set it to the run's spend limit"
        )
    return value


def parse_arms(value: str | list[Any]) -> tuple[str, ...]:
    items = [a.strip() for a in value.split(",")] if isinstance(value, str) else value
    if not items or any(not isinstance(a, str) or not a for a in items):
        raise ValueError(f"expected a non-empty list of arms ({', '.join(ARMS)})")
    for arm in items:
        if arm not in ARMS:
            raise ValueError(f"unknown arm {arm!r}; arms are {', '.join(ARMS)}")
    dupes = sorted({a for a in items if items.count(a) > 1})
    if dupes:
        raise ValueError(f"arm {dupes[0]!r} is listed twice")
    return tuple(items)


def parse_tasks(value: str | list[str]) -> str | list[str]:
    """A selector: all/train/eval, a domain, a task id, or a comma-separated list of ids."""
    if isinstance(value, list):
        return value
    text = value.strip()
    if not text:
        raise ValueError("expected a task selector (all, train, eval, a domain, or ids a/b,c/d)")
    return [t.strip() for t in text.split(",") if t.strip()] if "," in text else text


def parse_bool(value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    lowered = value.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def load_baseline(path: Path) -> dict[str, float]:
    """A flat {task_id: pass_rate} map (docs/corpus.md, "Run configs"); rates are numbers in [0, 1]."""
    # Here, not at the top: the settings table imports this module while pytest loads the inert
    # plugin, and the strict reader brings yaml (docs/architecture.md, "Cheap when inert").
    from .strict import DuplicateKey, loads_json

    try:
        data = loads_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: baseline file not found; fix the baseline path", usage=True) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read baseline: {err}", usage=True) from err
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: baseline is not valid JSON: line {err.lineno}: {err.msg}") from err
    except DuplicateKey as err:
        raise ConfigError(f"{path}: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a baseline is a JSON object mapping task ids to pass rates")
    for task_id, rate in data.items():
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ConfigError(
                f"{path}: {task_id}: baseline pass rate must be a number in [0, 1], got {json.dumps(rate)}"
            )
    return {k: float(v) for k, v in data.items()}


def parallel_count(text: str | int) -> int:
    """Any whole number: ``--parallel`` is clamped to 1..8 (:func:`clamp_parallel`), not refused."""
    try:
        return int(text)
    except (TypeError, ValueError):
        raise ValueError(f"expected a whole number of workers, got {text!r}") from None


def clamp_parallel(value: int, force: bool) -> tuple[int, str | None]:
    """Clamp to [1, 8]; a warning names the value asked for and the one used, and above 4
    warns of the load unless forced, as the reference does."""
    clamped = max(1, min(PARALLEL_MAX, value))
    if clamped < value:
        load = (
            ""
            if force
            else f"; above {PARALLEL_WARN}, high concurrency may overwhelm local providers "
            "(--bench-force-parallel suppresses this part)"
        )
        return clamped, f"--parallel {value}: clamped to {clamped} workers, the most a run uses{load}"
    if clamped > value:
        return clamped, f"--parallel {value}: clamped to 1 worker (no xdist)"
    if clamped > PARALLEL_WARN and not force:
        return clamped, (
            f"--parallel {clamped} exceeds {PARALLEL_WARN}; high concurrency may overwhelm local providers. "
            "Pass --bench-force-parallel to suppress this warning."
        )
    return clamped, None
