"""Server-side SVG charts for the dashboard pages: nothing fetched, no script.

``rate_chart`` draws rates (0..1) by week as lines, one per series, with a point per week that
had any verdicts; ``bar_chart`` draws counts by a label (findings per round). Each returns
markup that templates insert as is: every text in it is escaped here, and sizes are fixed so a
page lays out before any chart is read. Colours come from the page's CSS variables.
"""

from __future__ import annotations

from html import escape

from markupsafe import Markup

__all__ = ["bar_chart", "rate_chart"]

WIDTH, HEIGHT = 560, 180
LEFT, RIGHT, TOP, BOTTOM = 40, 12, 12, 34
COLOURS = ("var(--series-1)", "var(--series-2)", "var(--series-3)", "var(--series-4)")


def _frame(title: str, body: list[str], legend: list[str]) -> Markup:
    return Markup(
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        + "".join(body) + "".join(legend) + "</svg>")


def _axes(ticks: list[tuple[float, str]], labels: list[tuple[float, str]]) -> list[str]:
    out = []
    for y, text in ticks:
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" '
                   f'y2="{y:.1f}"/><text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" '
                   f'text-anchor="end">{escape(text)}</text>')
    for x, text in labels:
        out.append(f'<text class="tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" '
                   f'text-anchor="middle">{escape(text)}</text>')
    return out


def _every(n: int, most: int = 8) -> int:
    return max(1, -(-n // most))


def rate_chart(title: str, weeks: list[str], series: dict[str, list[float | None]]) -> Markup:
    """Lines of rates by week; ``None`` where a week had nothing to count."""
    if not weeks:
        return Markup('<p class="empty">No verdicts yet.</p>')
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(weeks) - 1, 1)

    def xy(i: int, value: float) -> tuple[float, float]:
        x = LEFT + (i * step if len(weeks) > 1 else plot_w / 2)
        return x, TOP + plot_h * (1 - value)

    body = _axes([(TOP + plot_h * (1 - v), f"{v:.0%}") for v in (0, 0.5, 1)],
                 [(xy(i, 0)[0], week) for i, week in enumerate(weeks)
                  if i % _every(len(weeks)) == 0])
    legend = []
    for n, (name, values) in enumerate(series.items()):
        colour = COLOURS[n % len(COLOURS)]
        points = [xy(i, v) for i, v in enumerate(values) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            body.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                        f'points="{path}"/>')
        for (x, y), v in zip(points, [v for v in values if v is not None], strict=True):
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                        f'<title>{escape(name)}: {v:.0%}</title></circle>')
        lx = LEFT + 8 + n * 170
        legend.append(f'<rect x="{lx}" y="{HEIGHT - 12}" width="10" height="10" '
                      f'fill="{colour}"/><text class="legend" x="{lx + 14}" '
                      f'y="{HEIGHT - 3}">{escape(name)}</text>')
    return _frame(title, body, legend)


def bar_chart(title: str, labels: list[str], values: list[float], unit: str = "") -> Markup:
    """Bars of ``values`` by ``labels``."""
    if not labels:
        return Markup('<p class="empty">Nothing yet.</p>')
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = max(values) if max(values) > 0 else 1.0  # all zero: an axis from 0 to 1
    slot = plot_w / len(labels)
    width = max(min(slot * 0.7, 48), 2)
    body = _axes([(TOP + plot_h * (1 - f), f"{top * f:.3g}") for f in (0, 0.5, 1)],
                 [(LEFT + slot * (i + 0.5), label) for i, label in enumerate(labels)
                  if i % _every(len(labels), 14) == 0])
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = plot_h * value / top
        x = LEFT + slot * (i + 0.5) - width / 2
        body.append(f'<rect class="bar" x="{x:.1f}" y="{TOP + plot_h - h:.1f}" '
                    f'width="{width:.1f}" height="{h:.1f}"><title>{escape(label)}: '
                    f'{value:.3g}{escape(unit)}</title></rect>')
    return _frame(title, body, [])
