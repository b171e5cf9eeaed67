"""How the report page writes numbers and column names: human headers instead of snake_case, and
a precision that suits each figure (Elo as integers, shares as percentages, other figures to
three significant digits). Only the page uses this; the downloads and the API keep full
precision and the original column names.

The rules go by column name, so a new table gets sensible output without registering it; a few
tables whose generic names ("mean", "median") hold shares are listed in ``SHARE_TABLES``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

# Exact headers for names whose plain-English form is not just the words.
HEADERS: dict[str, Any] = {
    "rater_kind": _("Rater kind"),
    "rater_id": _("Rater"),
    "n": _("n"),
    "n_raters": _("Raters"),
    "n_ratings": _("Ratings"),
    "n_judgements": _("Judgements"),
    "n_models": _("Models"),
    "n_items": _("Items"),
    "n_units": _("Items"),
    "q1": _("Lower quartile"),
    "q3": _("Upper quartile"),
    "ci_low": _("95% CI low"),
    "ci_high": _("95% CI high"),
    "rank_ci_low": _("Best rank (95%)"),
    "rank_ci_high": _("Worst rank (95%)"),
    "bt": _("Bradley-Terry"),
    "elo": _("Elo"),
    "spearman_rho": _("Spearman ρ"),
    "spearman_p": _("Spearman p"),
    "kendall_tau_b": _("Kendall τ-b"),
    "kendall_p": _("Kendall p"),
    "welch_t": _("Welch t"),
    "welch_p": _("Welch p"),
    "mannwhitney_p": _("Mann-Whitney p"),
    "binom_p": _("Binomial p"),
    "left_bias_p": _("Left-bias p"),
    "fleiss_kappa": _("Fleiss κ"),
    "mean_cohen_kappa": _("Mean Cohen κ"),
    "alpha": _("Krippendorff α"),
    "min_delta": _("Min. length difference"),
    "rel_diff": _("Relative difference"),
    "median_duration_s": _("Median time (s)"),
    "k": _("k"),
    "macro_f1": _("Macro F1"),
    "mae": _("MAE"),
    "spearman_ci_low": _("Spearman 95% CI low"),
    "spearman_ci_high": _("Spearman 95% CI high"),
    "kendall_ci_low": _("Kendall 95% CI low"),
    "kendall_ci_high": _("Kendall 95% CI high"),
    # Named in the notes of the judge section by these words (ranking/_agreement.html).
    "n_no_majority": _("Items without a majority"),
    "p_longer": _("Share won by the longer answer"),
    "length_coef": _("Length coefficient"),
    "lc_win_rate": _("Length-controlled win rate"),
}

# The other headers follow from the column name (``win_share`` -> "Win share"); these are
# the ones the report has today, listed so that makemessages collects them for translation.
GENERIC_HEADERS = (
    gettext_noop("Accuracy"),
    gettext_noop("Agrees with ds"),
    gettext_noop("Reliability"),
    gettext_noop("Star bias"),
    gettext_noop("Star sigma"),
    gettext_noop("Accuracy pairwise"),
    gettext_noop("Accuracy star"),
    gettext_noop("Agreement"),
    gettext_noop("Agreement no ties"),
    gettext_noop("Best model"),
    gettext_noop("Best score"),
    gettext_noop("Both bad ratio to pool"),
    gettext_noop("Both bad share"),
    gettext_noop("Consistency"),
    gettext_noop("Consistency pairwise"),
    gettext_noop("Consistency star"),
    gettext_noop("Cost per 1k"),
    gettext_noop("Criterion"),
    gettext_noop("Default judge"),
    gettext_noop("Diff"),
    gettext_noop("Dimension"),
    gettext_noop("Draw"),
    gettext_noop("Draw share"),
    gettext_noop("Draws"),
    gettext_noop("Elo rank"),
    gettext_noop("Estimate"),
    gettext_noop("Excluded"),
    gettext_noop("Games"),
    gettext_noop("Group"),
    gettext_noop("Group by"),
    gettext_noop("Human"),
    gettext_noop("Human high"),
    gettext_noop("Human low"),
    gettext_noop("Judge"),
    gettext_noop("Judge only"),
    gettext_noop("Kappa"),
    gettext_noop("Kind a"),
    gettext_noop("Kind b"),
    gettext_noop("Lam"),
    gettext_noop("Left of decisive"),
    gettext_noop("Left share"),
    gettext_noop("Level"),
    gettext_noop("Loss"),
    gettext_noop("Loss share"),
    gettext_noop("Losses"),
    gettext_noop("Macro precision"),
    gettext_noop("Macro recall"),
    gettext_noop("Max"),
    gettext_noop("Mean"),
    gettext_noop("Mean hint"),
    gettext_noop("Mean no hint"),
    gettext_noop("Median"),
    gettext_noop("Metric"),
    gettext_noop("Min"),
    gettext_noop("Mode"),
    gettext_noop("Model"),
    gettext_noop("N accurate"),
    gettext_noop("N at least k"),
    gettext_noop("N both orders"),
    gettext_noop("N calls"),
    gettext_noop("N consistent"),
    gettext_noop("N decisive"),
    gettext_noop("N hint"),
    gettext_noop("N human items"),
    gettext_noop("N human ratings"),
    gettext_noop("N items repeated"),
    gettext_noop("N judge only items"),
    gettext_noop("N matches"),
    gettext_noop("N no hint"),
    gettext_noop("N pairs"),
    gettext_noop("N pairs no ties"),
    gettext_noop("N pairwise"),
    gettext_noop("N questions"),
    gettext_noop("N rater pairs"),
    gettext_noop("N repeated"),
    gettext_noop("N shuffles"),
    gettext_noop("N star"),
    gettext_noop("N subjects"),
    gettext_noop("N values"),
    gettext_noop("Note"),
    gettext_noop("Observed sd mean"),
    gettext_noop("Observed var max"),
    gettext_noop("Observed var mean"),
    gettext_noop("P"),
    gettext_noop("Pearson"),
    gettext_noop("Points"),
    gettext_noop("Points rank"),
    gettext_noop("Points score"),
    gettext_noop("Pool"),
    gettext_noop("Pooled"),
    gettext_noop("Position consistency"),
    gettext_noop("Ppi"),
    gettext_noop("Ppi high"),
    gettext_noop("Ppi low"),
    gettext_noop("Predicted"),
    gettext_noop("Rank"),
    gettext_noop("Rank max"),
    gettext_noop("Rank mean"),
    gettext_noop("Rank min"),
    gettext_noop("Rank sd"),
    gettext_noop("Ranking"),
    gettext_noop("Ranking a"),
    gettext_noop("Ranking b"),
    gettext_noop("Rater a"),
    gettext_noop("Rater b"),
    gettext_noop("Raters"),
    gettext_noop("Rating"),
    gettext_noop("Raw win rate"),
    gettext_noop("Right share"),
    gettext_noop("Round"),
    gettext_noop("Saved items"),
    gettext_noop("Saved ratings"),
    gettext_noop("Score"),
    gettext_noop("Sd linear fit"),
    gettext_noop("Seconds per 1k"),
    gettext_noop("Share"),
    gettext_noop("Share parsed"),
    gettext_noop("Shuffle"),
    gettext_noop("Shuffle max"),
    gettext_noop("Shuffle mean"),
    gettext_noop("Shuffle min"),
    gettext_noop("Shuffle sd"),
    gettext_noop("Spearman"),
    gettext_noop("Spread"),
    gettext_noop("Star mean"),
    gettext_noop("Statistic"),
    gettext_noop("Strength"),
    gettext_noop("Tie ratio to pool"),
    gettext_noop("Tie share"),
    gettext_noop("Total"),
    gettext_noop("Truth"),
    gettext_noop("Value"),
    gettext_noop("Var linear fit"),
    gettext_noop("Var taylor"),
    gettext_noop("Variant"),
    gettext_noop("Width human"),
    gettext_noop("Width ppi"),
    gettext_noop("Win"),
    gettext_noop("Win share"),
    gettext_noop("Wins"),
    gettext_noop("Worst model"),
    gettext_noop("Worst score"),
)

# Figures on the Elo scale: whole numbers are precise enough (K = 32 moves them by tens).
ELO_COLUMNS = {"elo", "rating", "shuffle_mean", "shuffle_min", "shuffle_max",
               "shuffle_sd", "sd_linear_fit", "observed_sd_mean"}  # fmt: skip
# An interval is on the scale of its table's figure: Elo for Bradley-Terry ratings, but stars,
# kappa or alpha elsewhere, where a whole number would turn 0.21 - 0.26 into "0 - 0".
ELO_TABLES = {"leaderboard_bt": {"ci_low", "ci_high"}}
# Shares in [0, 1], written as percentages.
SHARE_COLUMNS = {"accuracy", "consistency", "share", "score", "pooled", "points_score",
                 "agreement", "agreement_no_ties", "win_rate", "lc_win_rate", "p_longer",
                 "position_consistency", "left_of_decisive", "share_parsed"}  # fmt: skip
SHARE_SUFFIXES = ("_share", "_accuracy", "_rate")
# Tables whose summary columns (mean, median, quartiles...) are shares too.
SHARE_TABLES = {
    "accuracy_by_pool": {"mean", "median", "min", "q1", "q3", "max", "pooled"},
    "consistency_by_pool": {"mean", "median", "min", "q1", "q3", "max", "pooled"},
}
# The LLMEval-2 total out of 100, to two decimals as the paper and README write it: three
# significant digits would show 86.98 as "87" and two models 77.32 (5th) and 77.31 (6th) alike.
TOTAL_COLUMNS = {"total"}
COUNT_PREFIXES = ("n_", "rank", "games", "wins", "draws", "losses", "round", "shuffle")
_WORD = re.compile(r"[a-z0-9]+")


def header(column: str) -> str:
    """``spearman_rho`` -> "Spearman ρ", ``n_at_least_k`` -> "N at least k", in the active
    language where the catalog has the header."""
    if column in HEADERS:
        return str(HEADERS[column])
    if not column or not _WORD.fullmatch(column.replace("_", "")):
        return column
    words = column.replace("_", " ").strip()
    # Translated at run time: the catalog holds the forms listed in GENERIC_HEADERS.
    return gettext(words[:1].upper() + words[1:])


def kind_of(column: str, table: str = "") -> str:
    """'elo', 'share', 'p', 'count', 'total' or 'number': how the page writes this column's
    values."""
    if column in SHARE_TABLES.get(table, ()):
        return "share"
    if column in TOTAL_COLUMNS:
        return "total"
    if column in ELO_COLUMNS or column in ELO_TABLES.get(table, ()):
        return "elo"
    if column in SHARE_COLUMNS or column.endswith(SHARE_SUFFIXES):
        return "share"
    if column.endswith("_p") or column == "p":
        return "p"
    if column.startswith(COUNT_PREFIXES) or column.endswith(("_rank", "_count")):
        return "count"
    return "number"


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits, never in scientific notation, no trailing
    zeros after the point (2.6 stays 2.6; 0.71428 -> 0.714; 85.96 -> 86). Values within a
    rounding error of zero (|x| < 1e-6, e.g. a fitted 6e-11) are written as 0."""
    if abs(value) < 1e-6:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def number(value: Any, kind: str = "number") -> str:
    """One value as the page shows it (empty for missing values)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(_("yes")) if value else str(_("no"))
    if not isinstance(value, int | float):
        try:
            if value != value:  # NaN, pd.NA and friends
                return ""
        except (TypeError, ValueError):
            return ""
        return str(value)
    value = float(value)
    if math.isnan(value):
        return ""
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if kind == "elo" or (kind == "count" and value.is_integer()):
        return f"{value:.0f}"
    if kind == "share":
        return f"{value * 100:.1f}%"
    if kind == "total":
        return f"{value:.2f}"
    if kind == "p":
        return "<0.001" if 0 <= value < 0.001 else f"{value:.3f}"
    return significant(value, 3)
