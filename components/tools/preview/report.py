"""`report.html`: the offline preview as pictures, for people rather than tools.

Three figures, each with the table of the figures it draws:

- the parts (the package's components at the top of the stack) and which builds on which, in columns of creation
  order, from the dependencies the program recorded (its resources' data edges, `depends_on` and providers);
- the idle cost against each NodePool's spend ceiling, from the cost estimate the preview prints;
- the destroy estimate's critical path as a timeline (`destroy_estimate`, read through its public result).

The figures are drawn by matplotlib as SVG and embedded in the page, which loads nothing else: it opens offline and
can be mailed or attached to a pull request as it is. matplotlib is imported only when a report is drawn, so the
preview's other uses (and `--help`) do not pay for it.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cost import Estimate, headline
from ..cost.calculator import Fill
from ..cost.render import money, money_range, pool_limit
from . import destroy_estimate
from .inventory import Inventory, Recorded
from .parts import Part, implied, levels, parts

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

REPORT = "report.html"

#: A label just right of its point: an offset, not leading spaces, which SVG text collapses in a browser.
_BESIDE: dict[str, Any] = {"xytext": (4, 0), "textcoords": "offset points", "va": "center"}
_ACCENT, _LIGHT, _EDGE, _FAINT = "#2b6cb0", "#bcd4ee", "#3c4a5a", "#d3d9e0"


# --------------------------------------------------------------------------------------------------- figures


def _svg(figure: Figure) -> str:
    """The figure as an inline `<svg>` element (no XML prolog, no creation date, no metadata)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    # the RDF metadata block only names its vocabularies; the page says what the figure is
    return re.sub(r"<metadata>.*?</metadata>\s*", "", text[text.index("<svg") :], flags=re.S)


def _parts_figure(found: list[Part]) -> str:
    from matplotlib.figure import Figure

    column = levels(found)
    columns: dict[int, list[Part]] = {}
    for part in found:
        columns.setdefault(column[part.name], []).append(part)
    rows = max((len(c) for c in columns.values()), default=1)
    figure = Figure(figsize=(max(4.0, 1.9 * len(columns)), 0.5 + 0.9 * rows))
    axes = figure.add_subplot()
    axes.set_axis_off()
    axes.set_xlim(-0.6, max(columns, default=0) + 0.6)
    axes.set_ylim(-0.6, rows - 0.4)
    boxes = {}
    for level, members in columns.items():
        offset = (rows - len(members)) / 2
        for row, part in enumerate(members):
            boxes[part.name] = axes.text(
                level,
                rows - 1 - (offset + row),
                f"{part.name}\n{part.resources} resources",
                ha="center",
                va="center",
                bbox={"boxstyle": "round,pad=0.4", "facecolor": _LIGHT, "edgecolor": _ACCENT},
                zorder=3,  # over the arrows that pass behind a box on their way to another
            )
    faint = implied(found)
    for part in found:
        for dependency in part.depends_on:
            span = column[part.name] - column.get(dependency, 0)
            shown = (part.name, dependency) not in faint
            axes.annotate(
                "",
                xy=(0, 0.5),
                xycoords=boxes[part.name],
                xytext=(1, 0.5),
                textcoords=boxes[dependency],
                zorder=2,
                arrowprops={
                    "arrowstyle": "-|>",
                    # an edge a longer path implies is drawn faint, so the order of creation reads at a glance
                    "color": _EDGE if shown else _FAINT,
                    "linewidth": 0.9 if shown else 0.6,
                    "shrinkA": 2,
                    "shrinkB": 2,
                    # an arrow that skips a column bends, so it does not run through the boxes between
                    "connectionstyle": f"arc3,rad={0.0 if span == 1 else 0.2}",
                },
            )
    return _svg(figure)


def cost_bars(cost: Estimate) -> list[tuple[str, float, float, str]]:
    """The cost figure's rows: (label, dark, light, note). Dark is the idle baseline or a limit filled with the
    cheapest allowed types, light the rest of the way to the dearest, as the legend says, the total row too."""
    idle = float(cost.idle_high) if cost.idle_high is not None else 0.0
    rows = [("idle baseline", idle, 0.0, money_range(cost.idle_low, cost.idle_high))]
    for pool in cost.pools:
        low = float(pool.cheapest.monthly) if pool.cheapest else 0.0
        high = float(pool.dearest.monthly) if pool.dearest else low
        rows.append(
            (f"pool {pool.pool}", low, high - low, money_range(_monthly(pool.cheapest), _monthly(pool.dearest)))
        )
    cheapest_total = sum(dark for _, dark, _, _ in rows)
    dearest = float(cost.ceiling) - cheapest_total if cost.ceiling is not None else 0.0
    rows.append(("idle + every pool at its limit", cheapest_total, dearest, money(cost.ceiling)))
    return rows


def _cost_figure(cost: Estimate) -> str:
    from matplotlib.figure import Figure

    labels, solid, light, notes = (list(column) for column in zip(*cost_bars(cost), strict=True))

    figure = Figure(figsize=(9.0, 0.6 + 0.45 * len(labels)))
    axes = figure.add_subplot()
    rows = list(range(len(labels)))
    axes.barh(rows, solid, color=_ACCENT, label="idle, or the limit filled with the cheapest allowed type")
    axes.barh(rows, light, left=solid, color=_LIGHT, label="... with the dearest allowed type")
    for row, (start, extra, note) in enumerate(zip(solid, light, notes, strict=True)):
        axes.annotate(note, (start + extra, row), **_BESIDE)
    axes.set_yticks(rows, labels)
    axes.invert_yaxis()
    axes.set_xlabel("USD per month")
    axes.set_xlim(0, max(s + x for s, x in zip(solid, light, strict=True)) * 1.45 or 1)
    axes.xaxis.set_major_formatter("${x:,.0f}")
    axes.spines[["top", "right"]].set_visible(False)
    axes.legend(loc="lower left", bbox_to_anchor=(0, 1), ncols=2, frameon=False)
    return _svg(figure)


def _destroy_figure(estimate: destroy_estimate.Estimate) -> str:
    from matplotlib.figure import Figure

    path = estimate.critical_path()
    figure = Figure(figsize=(9.0, 0.8 + 0.24 * max(len(path), 1)))
    axes = figure.add_subplot()
    start = 0
    for row, (seconds, resource) in enumerate(path):
        axes.barh(row, seconds / 60, left=start / 60, color=_ACCENT)
        label = f"{resource.name} ({resource.type.rsplit(':', 1)[-1]}, {seconds} s)"
        axes.annotate(label, ((start + seconds) / 60, row), fontsize=8, **_BESIDE)
        start += seconds
    axes.axvline(estimate.seconds / 60, color=_EDGE, linestyle="--", linewidth=0.8)
    axes.annotate(destroy_minutes(estimate), (estimate.seconds / 60, -1), **_BESIDE)
    axes.set_yticks([])
    axes.invert_yaxis()
    axes.set_xlim(0, estimate.seconds / 60 * 1.5 or 1)
    axes.set_xlabel("minutes into `pulumi destroy`")
    axes.spines[["top", "right", "left"]].set_visible(False)
    return _svg(figure)


# ------------------------------------------------------------------------------------------------------ page


def _monthly(fill: Fill | None) -> Decimal | None:
    return None if fill is None else fill.monthly


def _table(head: Iterable[str], rows: Iterable[Iterable[object]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _section(anchor: str, title: str, figure: str, caption: str, table: str) -> str:
    return (
        f'<section id="{anchor}"><h2>{html.escape(title)}</h2><figure>{figure}'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>{table}</section>"
    )


def destroy_minutes(estimate: destroy_estimate.Estimate) -> str:
    """How the destroy estimate's own report states its total: every level, and how many of them take time (those
    the figure draws; the others hold only deletes that return at once)."""
    levels, timed = len(estimate.batches), len(estimate.critical_path())
    return f"{estimate.seconds / 60:.1f} minutes in {levels} levels, {timed} of which take time"


def render(
    inventory: Inventory, *, project: str, stack: str, cost: Estimate | None, destroy: destroy_estimate.Estimate
) -> str:
    """The report page of one preview: `cost` is None for a program that is not the platform (a team stack)."""
    import matplotlib

    found = parts(inventory)
    # For every figure: text stays text (searchable, in the browser's font; no glyph outlines to embed), the ids
    # matplotlib hashes into the SVG are salted with a constant so two previews write identical reports, and a `$` is
    # a dollar, not the start of a formula.
    settings: dict[RcKeyType, Any] = {
        "svg.fonttype": "none",
        "svg.hashsalt": "eksml-report",
        "font.size": 9.0,
        "text.parse_math": False,
    }
    with matplotlib.rc_context(settings):
        sections = [
            _section(
                "parts",
                "Parts and their dependencies",
                _parts_figure(found),
                "Columns follow the order of creation: an arrow goes from a part to each part that builds on it, and "
                "`pulumi destroy` follows the arrows backwards. Faint arrows are dependencies a longer path implies.",
                _table(
                    ("part", "type", "resources", "depends on"),
                    ((p.name, p.type, p.resources, ", ".join(p.depends_on) or "-") for p in found),
                ),
            )
        ]
        if cost is not None:
            sections.append(_cost_section(cost))
        sections.append(
            _section(
                "destroy",
                f"pulumi destroy: {destroy_minutes(destroy)}",
                _destroy_figure(destroy),
                "The engine deletes in levels, each after the one before; a level lasts as long as its slowest "
                "delete, drawn here for every level that takes time (the others' deletes return at once). "
                f"{len(destroy.skipped)} resources go with their deleted_with target, without a "
                "delete call.",
                _table(
                    ("start (min)", "seconds", "slowest delete of its batch", "type"),
                    _timeline_rows(destroy.critical_path()),
                ),
            )
        )
    summary = [f"{len(inventory.resources)} resources in {len(found)} parts"]
    if cost is not None:
        summary.append(headline(cost))
    summary.append(f"pulumi destroy {destroy_minutes(destroy)}")
    title = f"Offline preview of {project}, stack '{stack}'"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p class=lead>{html.escape(' · '.join(summary))}</p>"
        + "".join(sections)
        + "</body></html>\n"
    )


def _timeline_rows(path: Iterable[tuple[int, Recorded]]) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    start = 0
    for seconds, resource in path:
        rows.append((f"{start / 60:.1f}", seconds, resource.name, resource.type))
        start += seconds
    return rows


def _cost_section(cost: Estimate) -> str:
    rows: list[tuple[object, ...]] = [
        (line.item, money_range(line.low, line.high), line.basis) for line in cost.baseline
    ]
    rows.append(("idle total", money_range(cost.idle_low, cost.idle_high), ""))
    for pool in cost.pools:
        fills = [f"{f.instances} × {f.instance_type}" for f in (pool.cheapest, pool.dearest) if f is not None]
        rows.append(
            (
                f"ceiling of pool {pool.pool} ({pool_limit(pool)})",
                money_range(_monthly(pool.cheapest), _monthly(pool.dearest)),
                " .. ".join(fills) or "not priced",
            )
        )
    rows.append(("all pools at their limits", money(cost.gpu_ceiling), "each filled with its dearest allowed type"))
    rows.append(("idle + every pool at its limit", money(cost.ceiling), ""))
    return _section(
        "cost",
        "Idle cost against each pool's ceiling",
        _cost_figure(cost),
        f"Per month, at the {cost.price_source}. A pool's ceiling is its limit filled with the cheapest (dark) to "
        "the dearest (light) instance type it allows.",
        _table(("item", "per month", "basis"), rows) + _missing(cost),
    )


def _missing(cost: Estimate) -> str:
    """What the price table lacks, left out of the sums (as the cost table says too)."""
    if not cost.missing:
        return ""
    items = "".join(f"<li>{html.escape(item)}</li>" for item in cost.missing)
    return f"<p>Missing from the price table (left out of the sums, not counted as $0):</p><ul>{items}</ul>"


_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1a202c}"
    "h2{margin-top:2.5rem;border-bottom:1px solid #cbd5e0}.lead{font-size:1.1rem}"
    "figure{margin:1rem 0}svg{max-width:100%;height:auto}figcaption{color:#4a5568;font-size:.9rem}"
    "table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #e2e8f0;padding:.2rem .5rem;"
    "text-align:left}td:nth-child(2){white-space:nowrap}"
)


def write(out: Path, page: str) -> Path:
    """Write the page beside the preview's other files, whole or not at all (a reader never sees half a report)."""
    target = out / REPORT
    partial = out / f".{REPORT}.partial"
    partial.write_text(page, encoding="utf-8")
    partial.replace(target)
    return target
