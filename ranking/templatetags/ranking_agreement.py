"""Template tags of the report's judge-vs-human section (``ranking/_agreement.html``).

The section lives in its own partial so that the report page includes it with one line; these
tags turn the report's tables into display tables there, instead of in the view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django import template
from django.http import QueryDict

from config.lazy import lazy_module
from ranking.forms import BT_TIE_CHOICES

# Every template engine loads this library: the statistics wait for the first report.
if TYPE_CHECKING:
    from ranking import presenters
else:
    presenters = lazy_module("ranking.presenters")

register = template.Library()


def _agreement_tables() -> tuple[str, ...]:
    """The report's judge tables; the raw length table sits beside the length-controlled one."""
    from ranking.stats.judge_report import JUDGE_KEYS

    return (*JUDGE_KEYS, "length_bias")


@register.simple_tag
def agreement_tables(report) -> dict[str, presenters.Table]:
    """The section's tables as display tables. Rater pairs with a judge come first (they are
    what the section is about); every pair is in the downloads and the API."""
    out = {}
    for name in _agreement_tables():
        df = report.table(name)
        if name == "kappa_pairs" and len(df):
            judge = (df["kind_a"] == "judge") | (df["kind_b"] == "judge")
            df = df.assign(_j=~judge).sort_values(["_j", "mode", "criterion"], kind="stable")
            df = df.drop(columns="_j")
        out[name] = presenters.table(df, name)
    return out


@register.simple_tag
def column_header(column: str) -> str:
    """The words a table of the page heads this column with (the notes name columns by them;
    the codes are for the downloads and the API)."""
    from ranking import formatting

    return formatting.header(column)


@register.simple_tag(takes_context=True)
def bt_ties_links(context) -> list[dict[str, object]]:
    """Links to the same report with each Bradley-Terry tie rule (other filters kept)."""
    request = context.get("request")
    query = request.GET.copy() if request is not None else QueryDict(mutable=True)
    current = query.get("bt_ties") or "half"
    links = []
    for rule, label in BT_TIE_CHOICES:  # the code in the link, its words on the page
        query["bt_ties"] = rule
        links.append(
            {"rule": rule, "label": label, "query": query.urlencode(), "current": rule == current}
        )
    return links
