"""Charts as server-rendered SVG (pure functions: numbers in, markup out; no script, no inline style).

Every text is escaped; colours come from the page's stylesheet through class names, so the
Content-Security-Policy needs no ``unsafe-inline``. The ``viewBox`` lets a chart shrink to a phone's width.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape


def _num(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def hbar_chart(rows: Sequence[tuple[str, float]], *, unit: str = "", title: str = "", width: int = 640) -> str:
    """Horizontal bars, one labelled row each (section sizes, per-model totals)."""
    row_h, label_w, value_w = 22, 170, 70
    height = max(1, len(rows)) * row_h + 8
    top = max((v for _, v in rows), default=0) or 1
    bar_w = width - label_w - value_w
    parts = [
        f'<svg class="chart hbar" viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">'
    ]
    if title:
        parts.append(f"<title>{escape(title)}</title>")
    for i, (label, value) in enumerate(rows):
        y = 4 + i * row_h
        w = max(1.0, bar_w * float(value) / top) if value else 0
        text = f"{_num(value)}{(' ' + unit) if unit else ''}"
        parts.append(
            f'<g class="row"><title>{escape(label)}: {value:g}{(" " + escape(unit)) if unit else ""}</title>'
            f'<text class="label" x="{label_w - 6}" y="{y + 15}" text-anchor="end">{escape(label[:26])}</text>'
            f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 8}" rx="2"/>'
            f'<text class="value" x="{label_w + w + 4:.1f}" y="{y + 15}">{escape(text)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def column_chart(
    days: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    title: str = "",
    unit: str = "",
    width: int = 640,
    height: int = 180,
) -> str:
    """Stacked columns per day; ``series`` is (name, one value per day), drawn as classes s0, s1 ..."""
    left, bottom, top_pad = 44, 22, 8
    plot_w, plot_h = width - left - 4, height - bottom - top_pad
    totals = [sum(values[i] for _, values in series) for i in range(len(days))]
    top = max(totals, default=0) or 1
    col = plot_w / max(1, len(days))
    parts = [
        f'<svg class="chart columns" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">'
    ]
    if title:
        parts.append(f"<title>{escape(title)}</title>")
    for frac in (0, 0.5, 1):
        y = top_pad + plot_h * (1 - frac)
        parts.append(
            f'<line class="grid" x1="{left}" x2="{width - 4}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{escape(_num(top * frac))}</text>'
        )
    for i, day in enumerate(days):
        x = left + i * col
        base = float(top_pad + plot_h)
        tip = ", ".join(f"{name} {values[i]:g}" for name, values in series)
        parts.append(
            f'<g class="day"><title>{escape(day)}: {escape(tip)}{(" " + escape(unit)) if unit else ""}</title>'
        )
        for k, (_name, values) in enumerate(series):
            h = plot_h * float(values[i]) / top
            if h <= 0:
                continue
            base -= h
            parts.append(
                f'<rect class="s{k}" x="{x + 1:.1f}" y="{base:.1f}" width="{max(1.0, col - 2):.1f}" height="{h:.1f}"/>'
            )
        parts.append("</g>")
        if i % max(1, len(days) // 6) == 0:
            parts.append(
                f'<text class="axis" x="{x + col / 2:.1f}" y="{height - 6}" '
                f'text-anchor="middle">{escape(day[5:])}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def legend(names: Sequence[str]) -> str:
    """A small HTML legend matching ``column_chart``'s series classes."""
    items = "".join(
        f'<span class="key"><svg width="10" height="10" aria-hidden="true"><rect class="s{k}" width="10" '
        f'height="10"/></svg> {escape(n)}</span>'
        for k, n in enumerate(names)
    )
    return f'<p class="legend">{items}</p>'
