"""The report's data-quality table: what in the study's data is not as a rubric expects, how
much of it there is and how the statistics treat it (data as given: nothing is changed)."""

from __future__ import annotations

import pandas as pd
from django.db.models import Count, Q

from annotation.models import Item, ParseStatus, Rating, Response, Score, Study
from evaluation.selectors import unparsed_judge_outputs

COLUMNS = ["issue", "criterion", "n", "treatment"]
OUT_OF_RANGE = "score outside the rubric's range"
EMPTY = "empty answer"
UNPARSED = "unparsed judge output"
TREATMENT = {
    OUT_OF_RANGE: "kept as given and flagged (Score.out_of_range); included in every statistic",
    EMPTY: "kept and rated as given (length 0); included in every statistic",
    UNPARSED: (
        "raw text kept (the imported rating's or the judge call's raw output); no score or "
        "choice, left out of the statistics"
    ),
}


def _out_of_range(study: Study) -> list[dict]:
    rows = (
        Score.objects.filter(rating__item__study=study, out_of_range=True)
        .values("criterion__key")
        .annotate(n=Count("id"))
        .order_by("criterion__key")
    )
    per = [{"issue": OUT_OF_RANGE, "criterion": r["criterion__key"], "n": r["n"]} for r in rows]
    return [{"issue": OUT_OF_RANGE, "criterion": "all", "n": sum(r["n"] for r in per)}, *per]


def _empty_answers(study: Study) -> int:
    items = Item.objects.filter(study=study)
    return (
        Response.objects.filter(length=0)
        .filter(
            Q(id__in=items.values("response_a_id"))
            | Q(id__in=items.exclude(response_b=None).values("response_b_id"))
        )
        .count()
    )


def data_quality(study: Study) -> pd.DataFrame:
    """One row per issue (and per criterion for out-of-range scores), zero counts included."""
    # Imported outputs that could not be read are ratings; live judge runs keep theirs as calls.
    unparsed = Rating.objects.filter(item__study=study, parse_status=ParseStatus.UNPARSED).count()
    unparsed += len(unparsed_judge_outputs(study))
    rows = [
        *_out_of_range(study),
        {"issue": EMPTY, "criterion": "", "n": _empty_answers(study)},
        {"issue": UNPARSED, "criterion": "", "n": unparsed},
    ]
    for row in rows:
        row["treatment"] = TREATMENT[row["issue"]]
    return pd.DataFrame(rows, columns=COLUMNS)
