"""The report's opening summary: one leaderboard per rater kind with intervals where the
statistics give them, and the judge-vs-human agreement headline. Built from the report's tables
only, so the page, a screenshot and a test see the same thing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext, pgettext

from annotation.models import Rater
from ranking import formatting
from ranking.services import StudyReport

KIND_LABELS = {
    "human": gettext_noop("Humans"),
    "judge": gettext_noop("LLM judges"),
    "all": gettext_noop("All raters"),
}


SOURCE_NAMES = {
    "bt": gettext_noop("Bradley-Terry"),
    "points": gettext_noop("Points"),
    "star": gettext_noop("mean stars"),
    "total": gettext_noop("LLMEval-2 total"),
}


@dataclass
class Board:
    kind: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass
class Summary:
    boards: list[Board] = field(default_factory=list)
    agreement: list[str] = field(default_factory=list)


def _kinds(*frames: pd.DataFrame) -> list[str]:
    present: set[str] = set()
    for df in frames:
        if "rater_kind" in df.columns:
            present |= set(df["rater_kind"].astype(str))
    kinds: list[str] = [k for k in ("human", "judge") if k in present]
    return kinds or (["all"] if "all" in present else [])


def _of(df: pd.DataFrame, kind: str, **where: str) -> pd.DataFrame:
    if df.empty or "rater_kind" not in df.columns or "model" not in df.columns:
        return pd.DataFrame()
    sel = df["rater_kind"].astype(str) == kind
    for col, value in where.items():
        if col not in df.columns:
            return pd.DataFrame()
        sel &= df[col].astype(str) == value
    out = df[sel]
    return out.set_index(out["model"].astype(str))


def _ranks(values: pd.Series) -> dict[str, str]:
    """Competition ranks (1, 1, 3) as text: equal values share the better rank."""
    return {m: str(int(r)) for m, r in values.rank(ascending=False, method="min").items()}


def _interval(df: pd.DataFrame, model: str, kind: str) -> str:
    lo, hi = _get(df, model, "ci_low"), _get(df, model, "ci_high")
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return ""
    return f"{formatting.number(lo, kind)} – {formatting.number(hi, kind)}"


def _get(df: pd.DataFrame, model: str, col: str):
    if df.empty or col not in df.columns or model not in df.index:
        return None
    return df.at[model, col]


def _star_board(report: StudyReport, kind: str) -> Board | None:
    star = _of(report.table("leaderboard_star"), kind, criterion="overall")
    if star.empty or "mean" not in star.columns:
        return None
    total = _of(report.table("leaderboard_total"), kind)
    has_total = not total.empty and "total" in total.columns
    # Criteria on different star ranges (1-3, 1-2, ...) make the plain mean a poor ranking: where
    # the study has the LLMEval-2 total (each criterion scaled to its range), that is the order.
    means = star["mean"].astype(float)
    if has_total:
        means = total["total"].astype(float).reindex(star.index).fillna(float("-inf"))
    order = means.sort_values(ascending=False, kind="stable").index
    ranks = _ranks(means)
    has_ci = {"ci_low", "ci_high"} <= set(star.columns)
    rows = []
    for model in order:
        row = [ranks[model], model, formatting.number(_get(star, model, "mean"))]
        if has_ci:
            row.append(_interval(star, model, "number"))
        if has_total:
            row.append(formatting.number(_get(total, model, "total"), "total"))
        row.append(formatting.number(_get(star, model, "n"), "count"))
        rows.append(row)
    columns = [_("Rank"), _("Model"), _("Mean stars")]
    columns += [_("Interval (95%)")] if has_ci else []
    columns += [_("Total /100")] if has_total else []
    columns.append(_("Ratings"))
    note = (
        _(
            "Ordered by the total out of 100 (each criterion scaled to its range, as LLMEval-2 "
            "totals them); ties share a rank."
        )
        if has_total
        else _("Mean stars over all criteria; equal means share a rank.")
    )
    return Board(kind, _(KIND_LABELS[kind]), columns, rows, note)


def _pair_board(report: StudyReport, kind: str) -> Board | None:
    bt = _of(report.table("leaderboard_bt"), kind)
    points = _of(report.table("leaderboard_points"), kind)
    elo = _of(report.table("leaderboard_elo"), kind)
    lead = bt if not bt.empty and "rating" in bt.columns else points
    value = "rating" if lead is bt else "score"
    if lead.empty or value not in lead.columns:
        return None
    values = lead[value].astype(float)
    order = values.sort_values(ascending=False).index
    ranks = _ranks(values)
    rows = []
    for model in order:
        rows.append([
            ranks[model], model,
            formatting.number(_get(bt, model, "rating"), "elo"), _interval(bt, model, "elo"),
            formatting.number(_get(points, model, "score"), "share"),
            formatting.number(_get(elo, model, "elo"), "elo"),
            formatting.number(_get(points, model, "games"), "count"),
        ])  # fmt: skip
    columns = [_("Rank"), _("Model"), _("Bradley-Terry"), _("Interval (95%)"), _("Points"),
               _("Elo"), _("Games")]  # fmt: skip
    note = _(
        "Ordered by Bradley-Terry (Elo scale) with its 95% bootstrap interval; Points = share of "
        "points won (win 1, tie ½); Elo depends on the order of the matches, Points does not."
    )
    return Board(kind, _(KIND_LABELS[kind]), columns, rows, note)


def _judge_labels(report: StudyReport) -> dict[str, str]:
    """Pseudonym -> "name (pseudonym)" for the study's judges: the tables name raters by
    pseudonym only, but a judge is a model, not a person, and the organizer chose its name."""
    judges = (
        Rater.objects.filter(kind=Rater.Kind.JUDGE, assignments__study=report.study)
        .exclude(name="")
        .values_list("pseudonym", "name")
        .distinct()
    )
    return {pseudonym: f"{name} ({pseudonym})" for pseudonym, name in judges}


def _ranking_name(code: object) -> str:
    """``ranking_agreement``'s ranking code ("star_mean", "points") in the page's words."""
    key = {"star_mean": "star"}.get(str(code), str(code))
    return _(SOURCE_NAMES[key]) if key in SOURCE_NAMES else str(code)


def _rank_agreement_with_intervals(report: StudyReport, labels: dict[str, str]) -> list[str]:
    """Spearman between the human and each judge's ranking with its question-bootstrap interval,
    from the ``ranking_agreement`` table when the statistics provide it."""
    df = report.table("ranking_agreement")
    need = {"judge", "ranking", "spearman_rho", "spearman_ci_low", "spearman_ci_high"}
    if df.empty or not need <= set(df.columns):
        return []
    return [
        (
            _(
                "Human ranking vs all judges together (%(ranking)s): Spearman ρ %(rho)s "
                "(95%% interval %(lo)s to %(hi)s)."
            )
            if r["judge"] == "judge"  # ranking_agreement's row for the judges pooled
            else _(
                "Human ranking vs judge %(judge)s (%(ranking)s): Spearman ρ %(rho)s "
                "(95%% interval %(lo)s to %(hi)s)."
            )
        )
        % {
            "judge": labels.get(str(r["judge"]), r["judge"]),
            "ranking": _ranking_name(r["ranking"]),
            "rho": formatting.number(r["spearman_rho"]),
            "lo": formatting.number(r["spearman_ci_low"]),
            "hi": formatting.number(r["spearman_ci_high"]),
        }
        for _i, r in df.iterrows()
        if pd.notna(r["spearman_rho"])
    ]


def _rank_agreement(report: StudyReport, labels: dict[str, str]) -> list[str]:
    """Spearman / Kendall between the human and the judge ranking (the correlations table)."""
    with_intervals = _rank_agreement_with_intervals(report, labels)
    if with_intervals:
        return with_intervals
    df = report.table("correlations")
    need = {"ranking_a", "ranking_b", "spearman_rho", "kendall_tau_b", "n_models"}
    if df.empty or not need <= set(df.columns):
        return []
    undefined: list[str] = []
    for source in ("bt", "points", "star", "total"):
        a, b = f"{source}/human", f"{source}/judge"
        hit = df[(df["ranking_a"].astype(str) == a) & (df["ranking_b"].astype(str) == b)]
        defined = hit[hit["spearman_rho"].notna()]
        if len(defined):
            return [_correlation_line(defined.iloc[0], source)]
        if len(hit) and not undefined:  # undefined (< 3 models): said why, never blanks
            undefined.append(_correlation_line(hit.iloc[0], source))
    return undefined


def _correlation_line(r: pd.Series, source: str) -> str:
    values = {
        "source": _(SOURCE_NAMES[source]),
        "rho": formatting.number(r["spearman_rho"]),
        "tau": formatting.number(r["kendall_tau_b"]),
        "n": formatting.number(r["n_models"], "count"),
    }
    count = int(r["n_models"]) if pd.notna(r["n_models"]) else 0
    if not values["rho"]:  # undefined (rankings.rank_correlation): say why, not a blank
        return (
            ngettext(
                "Human and judge rankings (%(source)s): no rank correlation over %(n)s model; "
                "it needs at least three models and neither ranking tying every model.",
                "Human and judge rankings (%(source)s): no rank correlation over %(n)s models; "
                "it needs at least three models and neither ranking tying every model.",
                count,
            )
            % values
        )
    return (
        ngettext(
            "Human and judge rankings (%(source)s): Spearman ρ %(rho)s, Kendall τ-b %(tau)s "
            "over %(n)s model.",
            "Human and judge rankings (%(source)s): Spearman ρ %(rho)s, Kendall τ-b %(tau)s "
            "over %(n)s models.",
            count,
        )
        % values
    )


def _majority_agreement(report: StudyReport, labels: dict[str, str]) -> list[str]:
    """Each judge's agreement with the human majority next to the humans' own (leave-one-out),
    from the ``judge_agreement`` table when the statistics provide it."""
    df = report.table("judge_agreement")
    if df.empty or not {"group_by", "group", "agreement", "n_pairs"} <= set(df.columns):
        return []
    lines = []

    def pooled(rows: pd.DataFrame) -> float | None:
        n = rows["n_pairs"].astype(float)
        if n.sum() <= 0:
            return None
        return float((rows["agreement"].astype(float).fillna(0) * n).sum() / n.sum())

    humans = df[df["group_by"].astype(str) == "humans"]
    human_value = pooled(humans) if len(humans) else None
    for judge, rows in df[df["group_by"].astype(str) == "judge"].groupby("group", sort=True):
        value = pooled(rows)
        if value is None:
            continue
        text = _("Judge %(judge)s agrees with the human majority on %(share)s of pairs") % {
            "judge": labels.get(str(judge), judge),
            "share": formatting.number(value, "share"),
        }
        if human_value is not None:
            text += _(" (humans with each other: %(share)s)") % {
                "share": formatting.number(human_value, "share")
            }
        lines.append(text + pgettext("end of a sentence", "."))
    return lines


def _unreadable_judges(report: StudyReport, labels: dict[str, str]) -> list[str]:
    """A judge none of whose outputs could be read has no verdict to compare: said so, rather
    than the headline's "no items rated by both humans and an LLM judge"."""
    df = report.table("judge_bias")
    if df.empty or not {"group_by", "group", "n_calls", "share_parsed"} <= set(df.columns):
        return []
    rows = df[(df["group_by"].astype(str) == "judge") & (df["share_parsed"] == 0)]
    return [
        ngettext(
            "Judge %(judge)s: its %(n)s output could not be read (unparsed), so it has no "
            "verdict to compare with the humans.",
            "Judge %(judge)s: none of its %(n)s outputs could be read (unparsed), so it has no "
            "verdict to compare with the humans.",
            int(r["n_calls"]),
        )
        % {"judge": labels.get(str(r["group"]), r["group"]), "n": int(r["n_calls"])}
        for _i, r in rows.iterrows()
        if int(r["n_calls"]) > 0
    ]


def report_summary(report: StudyReport) -> Summary:
    pairwise = report.study.mode == "pairwise"
    frames = (
        [report.table("leaderboard_points"), report.table("leaderboard_bt")]
        if pairwise
        else [report.table("leaderboard_star")]
    )
    summary = Summary()
    for kind in _kinds(*frames):
        board = _pair_board(report, kind) if pairwise else _star_board(report, kind)
        if board is not None:
            summary.boards.append(board)
    labels = _judge_labels(report)
    summary.agreement = [
        *_majority_agreement(report, labels),
        *_rank_agreement(report, labels),
        *_unreadable_judges(report, labels),
    ]
    return summary
