"""One chart per report section that ``ranking.charts`` does not draw yet: rank correlations,
length bias, human-vs-judge gaps, discrimination, hint effect, chance-corrected agreement,
position bias and annotators. Same conventions as ``ranking.charts``: matplotlib without pyplot,
SVG text, ``None`` when the table has nothing to draw, robust to a reshaped table."""

from __future__ import annotations

import numpy as np
import pandas as pd
from django.utils.translation import gettext as _
from matplotlib import rc_context

from ranking.charts import _RC, PALETTE, _figure, _has, _svg, table_word, word

MAX_BARS = 30


def _barh(labels: list[str], values, title: str, xlabel: str, *, share=False) -> str | None:
    """Horizontal bars, first label on top; shares drawn as percentages."""
    vals = np.asarray(values, dtype=float)[:MAX_BARS]
    labels = labels[:MAX_BARS]
    if not len(vals) or np.all(np.isnan(vals)):
        return None
    if share:
        vals = vals * 100
    with rc_context(_RC):
        fig = _figure(6.0, max(1.8, 0.24 * len(vals) + 0.9))
        ax = fig.add_subplot()
        y = np.arange(len(vals))[::-1]
        ax.barh(y, np.nan_to_num(vals), color=PALETTE[0], height=0.7)
        ax.set_yticks(y, labels)
        ax.set_xlabel(xlabel + (" (%)" if share else ""))
        ax.set_title(title)
        ax.axvline(0, color="#8c959f", lw=0.8)
        ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def _stacked(labels: list[str], parts: dict[str, np.ndarray], title: str) -> str | None:
    """Horizontal 100% stacked bars (shares), one colour per part."""
    if not labels:
        return None
    labels = labels[:MAX_BARS]
    with rc_context(_RC):
        fig = _figure(6.0, max(1.8, 0.26 * len(labels) + 1.1))
        ax = fig.add_subplot()
        y = np.arange(len(labels))[::-1]
        left = np.zeros(len(labels))
        for j, (name, vals) in enumerate(parts.items()):
            v = np.nan_to_num(np.asarray(vals, dtype=float)[: len(labels)]) * 100
            ax.barh(y, v, left=left, color=PALETTE[j % len(PALETTE)], height=0.7, label=name)
            left += v
        ax.set_yticks(y, labels)
        ax.set_xlim(0, 100)
        ax.set_xlabel(_("share (%)"))
        ax.set_title(title)
        fig.legend(ncols=len(parts), fontsize=7, frameon=False, loc="outside lower center")
    return _svg(fig)


def correlation_heatmap(df: pd.DataFrame) -> str | None:
    """Spearman rho between every two rankings, as a colour matrix."""
    from ranking.presenters import label  # the tables' words for the rankings

    if not _has(df, "ranking_a", "ranking_b", "spearman_rho"):
        return None
    names = list(dict.fromkeys([*df["ranking_a"].astype(str), *df["ranking_b"].astype(str)]))
    names = names[:16]
    idx = {n: i for i, n in enumerate(names)}
    m = np.eye(len(names))
    for r in df.itertuples(index=False):
        a, b = str(r.ranking_a), str(r.ranking_b)
        if a in idx and b in idx:
            m[idx[a], idx[b]] = m[idx[b], idx[a]] = float(r.spearman_rho)
    with rc_context(_RC):
        size = max(3.2, 0.42 * len(names) + 1.6)
        fig = _figure(size + 0.8, size)
        ax = fig.add_subplot()
        im = ax.imshow(m, vmin=-1, vmax=1, cmap="RdBu")
        words = [str(label("ranking_a", n)) for n in names]  # "Elo / human", as the tables
        ax.set_xticks(range(len(names)), words, rotation=60, ha="right")
        ax.set_yticks(range(len(names)), words)
        ax.set_title(_("Spearman ρ between rankings"))
        fig.colorbar(im, ax=ax, shrink=0.7)
    return _svg(fig)


def _said(df: pd.DataFrame, column: str) -> list[str]:
    """A column's codes (pool, rater kind, group...) in the words of the report's tables and
    the page's language ("pool: crowd", "评分者类型: 人工"), not as codes; other values as they are."""
    return [table_word(column, str(v)) for v in df[column]]


def length_bias(df: pd.DataFrame) -> str | None:
    if not _has(df, "group", "min_delta", "win_share", "draw_share", "loss_share"):
        return None
    if "n" in df.columns:
        df = df[df["n"].fillna(0) > 0]
    group = _said(df, "group")
    if "group_by" in df.columns:
        group = [f"{b}: {g}" for b, g in zip(_said(df, "group_by"), group, strict=True)]
    chars = _("%(group)s (≥%(n)d chars)")
    labels = [
        chars % {"group": g, "n": int(d)} for g, d in zip(group, df["min_delta"], strict=True)
    ]
    parts = {
        _("longer won"): df["win_share"].to_numpy(),
        _("draw"): df["draw_share"].to_numpy(),
        _("longer lost"): df["loss_share"].to_numpy(),
    }
    return _stacked(labels, parts, _("Does the longer answer win?"))


def gaps(df: pd.DataFrame) -> str | None:
    if not _has(df, "criterion", "k", "share"):
        return None
    df = df.sort_values(["criterion", "k"])
    labels = [f"{c}, |Δ| ≥ {k:g}" for c, k in zip(_said(df, "criterion"), df["k"], strict=True)]
    return _barh(
        labels, df["share"], _("Items where humans and judges differ"), _("items"), share=True
    )


def discrimination(df: pd.DataFrame) -> str | None:
    if not _has(df, "dimension", "value", "spread"):
        return None
    # A value rated on one model has no spread (empty): no bar, rather than a bar at 0.
    d = df[df["spread"].notna()].sort_values("spread", ascending=False)
    kinds = [f"{k}: " for k in _said(d, "rater_kind")] if "rater_kind" in d.columns else None
    named = [f"{m} {v}" for m, v in zip(_said(d, "dimension"), d["value"].astype(str), strict=True)]
    labels = [k + n for k, n in zip(kinds, named, strict=True)] if kinds else named
    return _barh(labels, d["spread"], _("Best minus worst model"), _("spread"))


def hint_effect(df: pd.DataFrame) -> str | None:
    if not _has(df, "metric", "criterion", "diff"):
        return None
    labels = [
        f"{m} / {c}" for m, c in zip(_said(df, "metric"), _said(df, "criterion"), strict=True)
    ]
    return _barh(labels, df["diff"], _("With hint minus without"), _("difference"))


def agreement(df: pd.DataFrame) -> str | None:
    if not _has(df, "pool", "criterion", "alpha"):
        return None
    d = df[df["alpha"].notna()]
    labels = [f"{p} / {c}" for p, c in zip(_said(d, "pool"), _said(d, "criterion"), strict=True)]
    return _barh(labels, d["alpha"], _("Krippendorff's α (1 = perfect, 0 = chance)"), "α")


def position_bias(df: pd.DataFrame) -> str | None:
    if not _has(df, "group", "left_share", "right_share", "tie_share"):
        return None
    labels = _said(df, "group")
    if "group_by" in df.columns:
        labels = [f"{b}: {g}" for b, g in zip(_said(df, "group_by"), labels, strict=True)]
    parts = {_("left"): df["left_share"].to_numpy(), _("right"): df["right_share"].to_numpy(),
             _("tie"): df["tie_share"].to_numpy()}  # fmt: skip
    if "both_bad_share" in df.columns:
        parts[_("both bad")] = df["both_bad_share"].to_numpy()
    return _stacked(labels, parts, _("Which side was chosen"))


def annotators(df: pd.DataFrame) -> str | None:
    """Ratings per rater (pseudonym), busiest first, labelled with the pool."""
    if not _has(df, "rater_id", "n_ratings"):
        return None
    d = df.sort_values("n_ratings", ascending=False)
    pool = " (" + d["pool"].astype(str).map(word) + ")" if "pool" in d.columns else ""
    labels = list(d["rater_id"].astype(str) + pool)
    return _barh(labels, d["n_ratings"], _("Ratings per rater"), _("ratings"))


def section_charts(tables: dict) -> dict[str, str | None]:
    from ranking import charts_quality  # it draws with this module's bars

    def t(name: str) -> pd.DataFrame:
        value = tables.get(name)
        return value if isinstance(value, pd.DataFrame) else pd.DataFrame()

    return {
        "correlations": correlation_heatmap(t("correlations")),
        "length_bias": length_bias(t("length_bias")),
        "gaps": gaps(t("gaps")),
        "discrimination": discrimination(t("discrimination")),
        "hint_effect": hint_effect(t("hint_effect")),
        "agreement": agreement(t("krippendorff")),
        "position_bias": position_bias(t("position_bias")),
        "annotators": annotators(t("annotator_diagnostics")),
        **charts_quality.quality_charts(t),
    }
