"""The report page's charts, grouped as the page places them.

The page itself draws no chart: each place for charts is an empty ``<div class="charts"
id="charts-<group>">`` and one request to ``ranking:report-charts`` (htmx, when the page has
loaded) answers with every group as an out-of-band swap, or, opened directly (no JavaScript),
as a page of its own. Drawing the charts (matplotlib) costs about as much as the rest of a
small study's page, so the tables come first and the charts follow (docs/decisions/reports.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from ranking import charts, charts_ppi, charts_sections, services
from ranking.templatetags.ranking_sections import SECTIONS


@dataclass(frozen=True)
class ChartGroup:
    id: str  # the page's placeholder is ``charts-<id>``; also the section's anchor
    title: Any
    figures: list[tuple[str, Any]]  # (data URI, alt text) of the charts there is data for


# The groups written out in the templates (the plain sections come from SECTIONS), as
# (group id, title, ((chart name, alt text), ...)), in page order around the plain sections.
LEADERBOARDS = (
    "leaderboards",
    _("Leaderboards"),
    (
        ("star", _("Mean stars per model")),
        ("points", _("Points per model")),
        ("bt", _("Bradley-Terry ratings with intervals")),
    ),
)
PPI = (
    "judge-assisted",
    _("Judge-assisted estimates (PPI++)"),
    (("ppi", _("Interval width against human ratings spent, humans only and judge-assisted")),),
)
QUALITY = (
    "quality",
    _("Annotator quality and exclusions"),
    (
        ("reliability", _("Reliability per annotator")),
        ("gold_accuracy", _("Gold-item accuracy per pool")),
    ),
)


def _cached(report, name: str, draw) -> Any:
    """A set of charts cached next to the snapshot it is drawn from, per language (the charts'
    words are translated); drawn each time for a report that has no snapshot key."""
    if report.cache_key is None:
        return draw()
    key = f"{report.cache_key}:{name}:{translation.get_language()}"
    return cache.get_or_set(key, draw, services.CACHE_SECONDS)


def svgs(report) -> dict[str, str | None]:
    """Every chart of the report page as SVG text (None: nothing to draw), by chart name."""
    return {
        **_cached(report, "charts", lambda: charts.report_charts(report.tables)),
        **_cached(report, "section-charts", lambda: charts_sections.section_charts(report.tables)),
        "ppi": _cached(
            report, "ppi-chart", lambda: charts_ppi.width_curve(report.table("ppi_curve"))
        ),
    }


def groups(report) -> list[ChartGroup]:
    """The page's chart groups in page order, each with the charts there is data for."""
    drawn = svgs(report)
    plain = [(s.id, s.title, s.charts) for s in SECTIONS]
    at = next(i for i, (sid, _t, _c) in enumerate(plain) if sid == "agreement") + 1
    layout = [LEADERBOARDS, *plain[:at], PPI, *plain[at:], QUALITY]
    out = []
    for gid, title, wanted in layout:
        figures = [(charts.as_data_uri(drawn.get(name)), alt) for name, alt in wanted]
        out.append(ChartGroup(gid, title, [(src, alt) for src, alt in figures if src]))
    return out
