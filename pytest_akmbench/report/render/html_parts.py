"""The building blocks of report.html: table cells and tables, section headings, legends, the
note that stands in for an empty plot, and the page's number formats."""

from __future__ import annotations

from html import escape
from typing import Any

from . import svg
from .fmt import num, signed


def interval_text(ci: dict[str, Any] | None, sign: bool = False) -> str:
    """``[low, high]`` of an interval dict, or n/a."""
    if not ci or ci.get("low") is None:
        return "n/a"
    f = signed if sign else num
    return f"[{f(ci['low'])}, {f(ci['high'])}]"


def money(v: float | None) -> str:
    return "n/a" if v is None else f"${v:.4f}"


def td(text: object, field: str | None = None, numeric: bool = False) -> str:
    cls = ' class="n"' if numeric else ""
    return f"<td{cls}{svg.attrs({'data-field': field})}>{escape(str(text))}</td>"


def table(head: list[str], rows: list[str], table_id: str) -> str:
    return (
        f'<table id="{table_id}"><thead><tr>'
        + "".join(f"<th>{escape(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def legend(arms: list[str], colours: dict[str, str]) -> str:
    return (
        '<p class="legend">'
        + "".join(f'<span><i style="background:{colours.get(a, "#999")}"></i>{escape(a)}</span>' for a in arms)
        + "</p>"
    )


def section(anchor: str, heading: str) -> str:
    return f'<h2 id="{anchor}">{escape(heading)}</h2>'


def empty(text: str, plot: str) -> str:
    """Said in place of a plot that has nothing to show (the test knows it is not missing)."""
    return f'<p class="empty" data-empty-plot="{plot}">{escape(text)}</p>'
