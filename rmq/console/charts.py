"""Line charts as inline SVG, drawn on the server: the console ships no JavaScript.

`line_chart(series)` draws each named series of (time ms, value) points as a polyline over a
shared time axis, with the value axis from 0 to the largest value, a few time labels and a
legend.  A chart without points says so instead.
"""

from __future__ import annotations

import time
from html import escape

COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777")

WIDTH, HEIGHT = 760, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 12, 28


def line_chart(series: dict[str, list[tuple[int, float]]], title: str) -> str:
    """An `<svg>` with one line per series (module docstring)."""
    points = [p for values in series.values() for p in values]
    if not points:
        return f'<p class="empty">No {escape(title)} collected yet for this day.</p>'
    t0 = min(t for t, _ in points)
    t1 = max(t for t, _ in points)
    top = max(v for _, v in points) or 1.0
    span = max(t1 - t0, 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(t: int) -> float:
        return LEFT + (t - t0) * plot_w / span

    def y(v: float) -> float:
        return TOP + plot_h - v * plot_h / top

    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {WIDTH} '
        f'{HEIGHT + 20 * ((len(series) + 3) // 4)}" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - RIGHT}" y2="{TOP + plot_h}" '
        'stroke="#999"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#999"/>',
    ]
    for fraction in (0.0, 0.5, 1.0):
        value = top * fraction
        parts.append(
            f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end" '
            f'font-size="11">{value:.4g}</text>'
        )
    for fraction in (0.0, 0.5, 1.0):
        t = int(t0 + span * fraction)
        label = time.strftime("%H:%M:%S", time.localtime(t / 1000))
        anchor = ("start", "middle", "end")[int(fraction * 2)]
        parts.append(
            f'<text x="{x(t):.1f}" y="{HEIGHT - 8}" text-anchor="{anchor}" '
            f'font-size="11">{label}</text>'
        )
    for index, (name, values) in enumerate(series.items()):
        colour = COLOURS[index % len(COLOURS)]
        coords = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in values)
        if len(values) == 1:
            ((t, v),) = values
            parts.append(f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>')
        else:
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coords}"/>'
            )
        lx = LEFT + (index % 4) * 180
        ly = HEIGHT + 14 + 20 * (index // 4)
        parts.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{lx + 14}" y="{ly}" font-size="12">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
