"""Small inline SVG charts for the HTML report: interval (forest) plots, bars and scatters.

Hand-written rather than drawn by a plotting library (docs/report.md, "The HTML report"): the
report needs a handful of simple chart types, must be a byte-for-byte deterministic function
of the envelope, must open offline from a CI artifact with no script, and is checked in a real
browser through its DOM. Every mark carries its exact value in ``data-*`` attributes and a
``<title>`` tooltip with the value as shown, so a test can compare a plot with report.json.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

CHAR_W = 6.6  # average width of a 12px sans-serif character, for label margins
ROW_H = 18
ARM_COLOURS = {"noakm": "#5b7aa6", "akm": "#d9822b", "synthetic": "#8a5ba6"}
OUTCOME_COLOURS = {"pass": "#3c9a5f", "fail": "#c8483c", "budget_exceeded": "#e0a526", "harness_error": "#8c8c8c"}


def fmt(value: float) -> str:
    """A coordinate: short, and the same bytes on every platform."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def exact(value: float | int | None) -> str:
    """A value for a ``data-*`` attribute: the shortest repr that reads back as the same float."""
    return "" if value is None else repr(float(value))


def attrs(values: dict[str, object]) -> str:
    return "".join(f' {k}="{escape(str(v), quote=True)}"' for k, v in values.items() if v is not None)


@dataclass(frozen=True, slots=True)
class Interval:
    """One row of an interval plot: a point with a 95% interval, and how to draw it."""

    label: str
    value: float
    low: float | None
    high: float | None
    tip: str
    colour: str = "#333"
    data: dict[str, object] = field(default_factory=dict)
    diamond: bool = False  # the pooled estimate of a forest plot


class Axis:
    """A linear x axis from ``lo`` to ``hi`` drawn over ``width`` pixels from ``left``."""

    def __init__(self, lo: float, hi: float, left: float, width: float) -> None:
        self.lo, self.hi, self.left, self.width = lo, hi, left, width

    def x(self, value: float) -> float:
        return self.left + (min(max(value, self.lo), self.hi) - self.lo) / (self.hi - self.lo) * self.width

    def ticks(
        self, top: float, bottom: float, values: Sequence[float], label: Callable[[float], str] | None = None
    ) -> list[str]:
        out = []
        for v in values:
            x = fmt(self.x(v))
            text = label(v) if label else f"{v:g}"
            out.append(
                f'<g class="tick" data-value="{exact(v)}"><line x1="{x}" x2="{x}" y1="{fmt(top)}" '
                f'y2="{fmt(bottom)}" stroke="#ddd"/><text x="{x}" y="{fmt(bottom + 13)}" '
                f'text-anchor="middle">{escape(text)}</text></g>'
            )
        return out


def _svg(name: str, width: float, height: float, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-plot="{name}" role="img" '
        f'width="{fmt(width)}" height="{fmt(height)}" viewBox="0 0 {fmt(width)} {fmt(height)}" '
        f'font-family="sans-serif" font-size="12"><title>{escape(title)}</title>' + "".join(body) + "</svg>"
    )


MAX_LABEL = 46  # characters; a longer label is shortened in the middle (the tooltip has it whole)


def _label_width(labels: Sequence[str]) -> float:
    return min(max((len(s) for s in labels), default=4), MAX_LABEL) * CHAR_W + 12


def short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL // 2 - 1] + "…" + label[-(MAX_LABEL // 2) :]


def interval_plot(
    name: str,
    title: str,
    rows: Sequence[Interval],
    *,
    lo: float,
    hi: float,
    ticks: Sequence[float],
    reference: float | None = None,
    width: float = 640,
) -> str:
    """Rows of point estimates with their intervals on one axis (a forest plot when
    ``reference`` marks no effect)."""
    left = _label_width([r.label for r in rows])
    axis = Axis(lo, hi, left, width - left - 20)
    top, bottom = 6.0, 6.0 + ROW_H * len(rows)
    body = axis.ticks(top, bottom, ticks, lambda v: f"{v:+g}" if reference is not None and v else f"{v:g}")
    if reference is not None:
        x = fmt(axis.x(reference))
        body.append(
            f'<line class="reference" x1="{x}" x2="{x}" y1="{fmt(top)}" y2="{fmt(bottom)}" stroke="#555" stroke-dasharray="3,3"/>'
        )
    for i, r in enumerate(rows):
        y = top + ROW_H * i + ROW_H / 2
        data = {
            "data-label": r.label,
            "data-value": exact(r.value),
            "data-low": exact(r.low),
            "data-high": exact(r.high),
            **r.data,
        }
        parts = [
            f'<g class="mark"{attrs(data)}><title>{escape(r.tip)}</title>',
            f'<text x="{fmt(left - 8)}" y="{fmt(y + 4)}" text-anchor="end">{escape(short(r.label))}</text>',
        ]
        if r.low is not None and r.high is not None:
            parts.append(
                f'<line class="ci" x1="{fmt(axis.x(r.low))}" x2="{fmt(axis.x(r.high))}" y1="{fmt(y)}" '
                f'y2="{fmt(y)}" stroke="{r.colour}" stroke-width="2"/>'
            )
        cx = axis.x(r.value)
        if r.diamond and r.low is not None and r.high is not None:
            xl, xh = axis.x(r.low), axis.x(r.high)
            parts.append(
                f'<polygon class="point" data-cx="{fmt(cx)}" points="{fmt(xl)},{fmt(y)} {fmt(cx)},{fmt(y - 6)} '
                f'{fmt(xh)},{fmt(y)} {fmt(cx)},{fmt(y + 6)}" fill="{r.colour}"/>'
            )
        else:
            parts.append(f'<circle class="point" cx="{fmt(cx)}" cy="{fmt(y)}" r="4" fill="{r.colour}"/>')
        body.append("".join(parts) + "</g>")
    return _svg(name, width, bottom + 20, body, title)


def bar_plot(
    name: str,
    title: str,
    rows: Sequence[tuple[str, float, str, dict[str, object]]],
    *,
    hi: float,
    colour: str = "#5b7aa6",
    width: float = 640,
) -> str:
    """Horizontal bars: (label, value, text shown after the bar, data attributes) from 0 to ``hi``."""
    left = _label_width([r[0] for r in rows])
    axis = Axis(0.0, hi or 1.0, left, width - left - 90)
    body = []
    for i, (label, value, text, data) in enumerate(rows):
        y = 4 + ROW_H * i
        w = axis.x(value) - left
        body.append(
            f'<g class="mark"{attrs({"data-label": label, "data-value": exact(value), **data})}>'
            f"<title>{escape(label)}: {escape(text)}</title>"
            f'<text x="{fmt(left - 8)}" y="{fmt(y + 13)}" text-anchor="end">{escape(short(label))}</text>'
            f'<rect class="bar" x="{fmt(left)}" y="{fmt(y + 2)}" width="{fmt(max(w, 1.0))}" height="{ROW_H - 4}" fill="{colour}"/>'
            f'<text class="value" x="{fmt(left + max(w, 1.0) + 4)}" y="{fmt(y + 13)}">{escape(text)}</text></g>'
        )
    return _svg(name, width, 8 + ROW_H * len(rows), body, title)


def stacked_bars(
    name: str,
    title: str,
    rows: Sequence[tuple[str, Sequence[tuple[str, int]]]],
    *,
    colours: dict[str, str],
    width: float = 640,
) -> str:
    """One 100% bar per row, split into counted segments (e.g. the outcomes of an arm's runs)."""
    left = _label_width([r[0] for r in rows])
    span = width - left - 20
    body = []
    for i, (label, segments) in enumerate(rows):
        y = 4 + ROW_H * 1.5 * i
        total = sum(n for _, n in segments) or 1
        x = left
        parts = [
            f'<g class="mark" data-label="{escape(label, quote=True)}">'
            f'<text x="{fmt(left - 8)}" y="{fmt(y + 15)}" text-anchor="end">{escape(short(label))}</text>'
        ]
        for seg, n in segments:
            if not n:
                continue
            w = n / total * span
            parts.append(
                f'<rect class="segment" data-segment="{escape(seg, quote=True)}" data-value="{n}" x="{fmt(x)}" '
                f'y="{fmt(y + 2)}" width="{fmt(w)}" height="{ROW_H}" fill="{colours.get(seg, "#999")}">'
                f"<title>{escape(label)}: {escape(seg)} {n} of {total}</title></rect>"
            )
            if w > 8 * len(str(n)):
                parts.append(
                    f'<text x="{fmt(x + w / 2)}" y="{fmt(y + 15)}" text-anchor="middle" fill="#fff">{n}</text>'
                )
            x += w
        body.append("".join(parts) + "</g>")
    return _svg(name, width, 8 + ROW_H * 1.5 * len(rows), body, title)


@dataclass(frozen=True, slots=True)
class Point:
    x: float
    y: float
    colour: str
    tip: str
    low: float | None = None  # a vertical interval on y
    high: float | None = None
    size: float = 3.0
    data: dict[str, object] = field(default_factory=dict)


def _scatter_mark(p: Point, cx: float, cy: float, dodge: int, y_of: Callable[[float], float]) -> str:
    data = {
        "data-x": exact(p.x),
        "data-y": exact(p.y),
        "data-low": exact(p.low),
        "data-high": exact(p.high),
        **({"data-dodged": dodge} if dodge else {}),
        **p.data,
    }
    ci = ""
    if p.low is not None and p.high is not None:
        ci = (
            f'<line class="ci" x1="{fmt(cx)}" x2="{fmt(cx)}" y1="{fmt(y_of(p.low))}" y2="{fmt(y_of(p.high))}" '
            f'stroke="{p.colour}" stroke-width="2"/>'
        )
    fill = (
        f'fill="none" stroke="{p.colour}" stroke-width="2"'
        if dodge
        else f'fill="{p.colour}" fill-opacity="{1 if p.size > 3 else 0.45}"'
    )
    return (
        f'<g class="mark"{attrs(data)}><title>{escape(p.tip)}</title>{ci}<circle class="point" cx="{fmt(cx)}" '
        f'cy="{fmt(cy)}" r="{p.size:g}" {fill}/></g>'
    )


def nice_max(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above ``value`` (an axis end)."""
    if value <= 0:
        return 1.0
    k = 10.0 ** math.floor(math.log10(value))
    return next(m * k for m in (1.0, 2.0, 5.0, 10.0) if m * k >= value)


def scatter(
    name: str,
    title: str,
    points: Sequence[Point],
    *,
    x_label: str,
    y_label: str,
    x_hi: float,
    x_fmt: Callable[[float], str] | None = None,
    width: float = 640,
    height: float = 300,
) -> str:
    """Points on x ∈ [0, x_hi] and y ∈ [0, 1] (a pass rate), with optional vertical intervals."""
    left, right, top, bottom = 48.0, 20.0, 10.0, height - 40
    axis = Axis(0.0, x_hi, left, width - left - right)

    def y_of(v: float) -> float:
        return bottom - min(max(v, 0.0), 1.0) * (bottom - top)

    xs = [x_hi * i / 4 for i in range(5)]
    body = axis.ticks(top, bottom, xs, x_fmt or (lambda v: f"{v:,.0f}"))
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(
            f'<g class="ytick" data-value="{exact(v)}"><line x1="{fmt(left)}" x2="{fmt(width - right)}" '
            f'y1="{fmt(y_of(v))}" y2="{fmt(y_of(v))}" stroke="#eee"/><text x="{fmt(left - 6)}" '
            f'y="{fmt(y_of(v) + 4)}" text-anchor="end">{v:g}</text></g>'
        )
    body.append(
        f'<text x="{fmt(left + (width - left - right) / 2)}" y="{fmt(height - 6)}" text-anchor="middle">{escape(x_label)}</text>'
    )
    body.append(
        f'<text transform="translate(12 {fmt((top + bottom) / 2)}) rotate(-90)" text-anchor="middle">{escape(y_label)}</text>'
    )
    taken: dict[tuple[str, str, float], int] = {}
    for p in points:
        cx, cy = axis.x(p.x), y_of(p.y)
        # A point on an earlier one of its size (two arms with equal figures) is moved aside and
        # drawn as a ring, so neither hides the other.
        spot = (fmt(cx), fmt(cy), p.size)
        dodge = taken.get(spot, 0)
        taken[spot] = dodge + 1
        body.append(_scatter_mark(p, cx + dodge * (p.size + 2), cy, dodge, y_of))
    return _svg(name, width, height, body, title)
