"""Template tags of the report's judge-assisted section (``ranking/_ppi.html``): the PPI++ table
of one judge shaped for the page and links to pick another judge (its width chart comes with
the page's other charts: ranking/chart_groups.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django import template
from django.http import QueryDict
from django.utils.translation import gettext as _

from config.lazy import lazy_module
from ranking import formatting

# Every template engine loads this library: matplotlib and the statistics wait for a report.
if TYPE_CHECKING:
    from ranking import presenters
    from ranking.presenters import Table
else:
    presenters = lazy_module("ranking.presenters")

register = template.Library()

KINDS = {"star_mean": "number", "win_rate": "share", "bt_rating": "elo"}


def _num(value, kind: str) -> str:
    return formatting.number(None if value != value else value, kind)


def _with_interval(value, low, high, kind: str) -> str:
    text = _num(value, kind)
    if text and low == low and high == high:
        text += f" [{_num(low, kind)}, {_num(high, kind)}]"
    return text


def _labels() -> dict[str, str]:
    return {
        "star_mean": _("Mean stars"),
        "win_rate": _("Win rate"),
        "bt_rating": _("Bradley-Terry"),
    }


def _notes() -> dict[str, str]:
    """The statistics' notes (plain English, no Django there) in the page's language."""
    from ranking.stats import ppi_section as ps

    few = _("not enough data: fewer than %(n)d items rated by both humans and this judge")
    return {
        ps.NOTE_FEW.format(n=ps.MIN_ITEMS): few % {"n": ps.MIN_ITEMS},
        ps.NOTE_FLAT: _("not enough data: the human ratings do not vary"),
        ps.NOTE_NO_JUDGE: _("not enough data: no LLM judge ratings to combine with"),
        ps.NOTE_NO_HUMAN: _(
            "not enough data: no human ratings (humans must rate a random subset of items)"
        ),
        ps.NOTE_BT: _(
            "not enough data: Bradley-Terry needs human comparisons connecting at least two models"
        ),
    }


def side_by_side(df) -> Table:
    """Human-only, judge-only and combined figures in one row per (statistic, criterion, model)."""
    columns = [_("Statistic"), _("Criterion"), _("Model"), _("Human items"),
               _("Human only [95%]"), _("Judge only"), _("Judge-assisted [95%]"), _("λ"),
               _("Human ratings saved"), _("Note")]  # fmt: skip
    labels, notes = _labels(), _notes()
    rows = []
    for r in df.itertuples(index=False):
        kind = KINDS.get(r.statistic, "number")
        rows.append([
            str(labels.get(r.statistic, r.statistic)), r.criterion, r.model,
            _num(r.n_human_items, "count"),
            _with_interval(r.human, r.human_low, r.human_high, kind),
            _num(r.judge_only, kind),
            _with_interval(r.ppi, r.ppi_low, r.ppi_high, kind),
            _num(r.lam, "number"),
            _num(round(r.saved_ratings) if r.saved_ratings == r.saved_ratings else r.saved_ratings,
                 "count"),
            notes.get(r.note, r.note),
        ])  # fmt: skip
    numeric = [False, False, False, True, True, True, True, True, True, False]
    return presenters.Table("ppi", [str(c) for c in columns], rows, len(rows), numeric)


@register.simple_tag(takes_context=True)
def ppi_view(context, report) -> dict[str, object]:
    """The section for the judge named by ``?ppi_judge=`` (default: the judge with the most
    ratings), with links to the others (other query parameters kept)."""
    df = report.table("ppi")
    request = context.get("request")
    query = request.GET.copy() if request is not None else QueryDict(mutable=True)
    judges = [j for j in dict.fromkeys(df["judge"].astype(str)) if j] if len(df) else []
    wanted = query.get("ppi_judge", "")
    judge = wanted if wanted in judges else (judges[0] if judges else "")
    links = []
    for name in judges:
        query["ppi_judge"] = name
        links.append({"judge": name, "query": query.urlencode(), "current": name == judge})
    shown = df[df["judge"].astype(str) == judge] if judges else df
    return {
        "judge": judge,
        "links": links if len(links) > 1 else [],
        "table": side_by_side(shown),
    }
