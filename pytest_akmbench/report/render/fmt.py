"""How the markdown of a report and of a comparison writes numbers, intervals and tables."""

from __future__ import annotations

from typing import Any


def fmt_ci(low: float | None, high: float | None, with_sign: bool = False) -> str:
    if low is None or high is None:
        return "[n/a]"
    f = signed if with_sign else num
    return f"[{f(low)}, {f(high)}]"


def fmt_p(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.2g}"


def num(value: float | None, digits: int = 2) -> str:
    """A number to ``digits`` decimals, or n/a."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 2) -> str:
    """A signed number (+0.18, -0.05), never +0.00 or -0.00."""
    if value is None:
        return "n/a"
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def fmt_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def md_table(rows: list[list[Any]], head: list[str]) -> str:
    # tabulate (and wcwidth below it) here, not at the top: every bench start-up imports this
    # module, a --co included, which writes no table (benchmarks/README.md, "Collection, third pass").
    from tabulate import tabulate

    return str(tabulate(rows, head, tablefmt="github", disable_numparse=True))


def fmt_rate_ci(row: dict[str, Any] | None) -> str:
    if row is None:
        return "n/a"
    if row["pass_rate"] is None:
        return "n/a (no valid run)"
    ci = row.get("pass_rate_ci")
    text = num(row["pass_rate"]) + (f" {fmt_ci(ci['low'], ci['high'])}" if ci else "")
    return text + (" ~" if row.get("flaky") else "") + ("" if row.get("floor_status", "covered") == "covered" else " *")


def fmt_obs(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)
