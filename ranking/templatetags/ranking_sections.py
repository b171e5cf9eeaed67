"""The report's plain sections (``ranking/_section.html``): a title, a note, charts and tables.

Most of the report's sections have the same shape; they are listed here once, as data, and the
page draws each with the same partial. Sections with their own layout (leaderboards,
correlations, the judge sections, quality) stay written out in the templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ranking.definitions import SECTION_ANCHORS

register = template.Library()

TABLE = _("Table")


@dataclass(frozen=True)
class Section:
    id: str
    title: Any
    note: Any
    charts: tuple[tuple[str, Any], ...]  # (chart name, alt text)
    tables: tuple[tuple[Any, str], ...]  # (summary, table name)

    @classmethod
    def one_table(
        cls, id: str, title: Any, note: Any, table: str, alt: Any, chart: str | None = None
    ) -> Section:
        """The common case: one chart (named as its table unless ``chart``) above one table."""
        return cls(id, title, note, ((chart or table, alt),), ((TABLE, table),))


PER_POOL = (_("Table: per pool"), _("Table: per criterion"), _("Table: per rater (pseudonyms)"))


def _per_pool(stem: str) -> tuple[tuple[Any, str], ...]:
    """The three tables of a per-pool figure: per pool, per criterion and per rater."""
    names = (f"{stem}_by_pool", f"{stem}_by_criterion", f"{stem}_by_rater")
    return tuple(zip(PER_POOL, names, strict=True))


SECTIONS = (
    Section(
        "correlations",
        _("Rank correlations"),
        _("How alike two rankings are: 1 = the same order, 0 = unrelated, -1 = reversed."),
        (("correlations", _("Spearman correlation between every two rankings")),),
        (
            (_("Table: Spearman ρ above the diagonal, Kendall τ-b below"), "correlation_matrix"),
            (_("Table: every pair with p-values"), "correlations"),
        ),
    ),
    Section(
        "accuracy",
        _("Accuracy per pool"),
        _(
            "A rating is accurate when it is within one standard deviation of the item's mean "
            "rating (humans and judges together); raters with fewer than 5 ratings are left out."
        ),
        (("accuracy", _("Box plot of accuracy per pool")),),
        _per_pool("accuracy"),
    ),
    Section(
        "consistency",
        _("Consistency per pool"),
        _(
            "Over hidden repeats: the share of a rater's ratings of an item that equal its most "
            "frequent rating of that item."
        ),
        (("consistency", _("Box plot of consistency per pool")),),
        _per_pool("consistency"),
    ),
    Section.one_table(
        "length-bias",
        _("Length bias"),
        _(
            "Pairwise ratings whose answers differ by at least the given number of characters: "
            "how often the longer answer won, drew or lost."
        ),
        "length_bias",
        _("Share of wins, draws and losses of the longer answer"),
    ),
    Section.one_table(
        "gaps",
        _("Human vs judge gaps"),
        _(
            "Share of items where |mean human score - mean judge score| is at least k, per "
            "criterion."
        ),
        "gaps",
        _("Share of items with a human-judge gap of at least k"),
    ),
    Section.one_table(
        "discrimination",
        _("Discrimination"),
        _("Spread between the best and the worst model per criterion and per task type."),
        "discrimination",
        _("Spread between the best and the worst model"),
    ),
    Section.one_table(
        "hints",
        _("Hint effect"),
        _("Only when hints were randomised: scores and accuracy with and without the hint."),
        "hint_effect",
        _("Difference with and without the hint"),
    ),
    Section(
        "elo",
        _("Elo stability"),
        _(
            "Elo depends on the order of the matches; Points does not. Wide spreads over "
            "shuffles mean the Elo ranking is not settled."
        ),
        (
            ("elo_trajectory", _("Elo ratings over the last matches")),
            ("elo_shuffles", _("Elo ratings over shuffled match orders")),
        ),
        (
            (_("Table: Elo over shuffles next to Points"), "elo_stability"),
            (
                _("Table: variance, the paper's approximation next to the observed one"),
                "elo_variance",
            ),
        ),
    ),
    Section(
        "agreement",
        _("Agreement between raters"),
        _("Chance-corrected: 1 = perfect agreement, 0 = what chance alone would give."),
        (("agreement", _("Krippendorff alpha per pool and criterion")),),
        (
            (_("Table: Krippendorff's α"), "krippendorff"),
            (_("Table: κ (Fleiss; mean pairwise Cohen)"), "kappa"),
        ),
    ),
    Section.one_table(
        "position",
        _("Position bias"),
        _(
            "Which side of the screen was chosen; without bias, left and right are equally "
            "frequent."
        ),
        "position_bias",
        _("Share of left, right, tie and both-bad choices"),
    ),
    Section.one_table(
        "annotators",
        _("Annotator diagnostics"),
        _("Raters by pseudonym only."),
        "annotator_diagnostics",
        _("Ratings per rater"),
        chart="annotators",
    ),
)
_BY_ID = {s.id: s for s in SECTIONS}


@register.simple_tag
def definition(section_id: str) -> SafeString:
    """A link from a report section to the definitions of its figures (docs/statistics.md)."""
    url = f"{reverse('ranking:statistics')}#{SECTION_ANCHORS[section_id]}"
    return format_html('<a class="definition" href="{}">{}</a>', url, gettext("Definitions"))


@register.inclusion_tag("ranking/_section.html", takes_context=True)
def report_section(context: template.Context, section_id: str) -> dict[str, Any]:
    """One plain section, its tables taken from the page's ``tables`` (the correlation matrix
    and ``elo_variance`` are tables of their own in the page context); its charts follow
    (ranking/chart_groups.py)."""
    section = _BY_ID[section_id]
    tables = dict(context.get("tables") or {})
    tables.update({name: context.get(name) for name in ("correlation_matrix", "elo_variance")})
    return {
        "section": section,
        "tables": [(summary, tables.get(name)) for summary, name in section.tables],
    }
