"""Charts of the report's annotator-quality tables: reliability per annotator (Dawid-Skene for
pairwise, 1/sigma of the bias + noise model for stars) and check accuracy per pool. Same
conventions as ``ranking.charts``: SVG text, ``None`` when there is nothing to draw."""

from __future__ import annotations

import pandas as pd
from django.utils.translation import gettext as _

from ranking.charts import _has, table_word
from ranking.charts_sections import _barh


def reliability(df: pd.DataFrame) -> str | None:
    """Reliability per annotator (pseudonym and pool), most reliable first, per mode."""
    if not _has(df, "rater_id", "reliability", "mode"):
        return None
    d = df.sort_values(["mode", "reliability"], ascending=[True, False])
    labels = [
        f"{table_word('mode', mode)} · {rater} ({table_word('pool', pool)})"
        for mode, rater, pool in zip(
            d["mode"].astype(str), d["rater_id"].astype(str), d["pool"].astype(str), strict=True
        )
    ]
    pairwise_only = set(d["mode"]) == {"pairwise"}
    xlabel = (
        _("Dawid-Skene expected accuracy")
        if pairwise_only
        else _("reliability (DS accuracy; stars: 1/sigma)")
    )
    return _barh(labels, d["reliability"], _("Reliability per annotator"), xlabel)


def gold_accuracy(df: pd.DataFrame) -> str | None:
    """Share of gold items (and attention checks) answered as accepted, per pool."""
    if not _has(df, "pool", "check_kind", "accuracy"):
        return None
    labels = [
        f"{table_word('pool', pool)} · {kind}"
        for pool, kind in zip(df["pool"].astype(str), df["check_kind"].astype(str), strict=True)
    ]
    return _barh(
        labels, df["accuracy"], _("Check accuracy per pool"), _("answered as accepted"), share=True
    )


def quality_charts(t) -> dict[str, str | None]:
    return {
        "reliability": reliability(t("annotator_reliability")),
        "gold_accuracy": gold_accuracy(t("gold_by_pool")),
    }
