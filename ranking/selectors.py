"""Reads shared by the report page, the API, the exports and the report command.

``study_frames`` turns a study's submitted ratings into the two frames of the statistics
contract (``ranking.stats.schema``): one row per (star rating, criterion) and one row per pairwise
rating. It runs a handful of ``values_list`` queries (ratings, scores, items, raters) and joins in
pandas, so no ORM object is built per rating; a 100k-rating study is read in about a second.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import Count, Max, Q

from annotation.models import (
    Assignment,
    Criterion,
    Item,
    ParseStatus,
    Rater,
    Rating,
    Score,
    Study,
)
from config.lazy import lazy_module
from evaluation.models import JudgeCall, JudgeRun

# numpy and pandas load with the first frame: the size and stamp queries here need neither, and
# an import asks whether a study is large (ranking/warm.py, config/lazy.py).
if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ranking.quality import QualityScope
else:
    np = lazy_module("numpy")
    pd = lazy_module("pandas")


@dataclass(frozen=True)
class StudyFrames:
    star_df: pd.DataFrame
    pair_df: pd.DataFrame


def _submitted_ratings(study: Study, *, exclude_simulated: bool = False):
    qs = Rating.objects.filter(
        assignment__study=study, assignment__status=Assignment.Status.SUBMITTED
    )
    # Quality checks (gold items, attention checks) measure annotators, not models.
    qs = qs.filter(item__check_kind="")
    if exclude_simulated:
        # A subquery rather than exclude() across the JSON key: raters without the key must stay
        # (exclude() on a missing JSON key drops them on SQLite).
        qs = qs.exclude(rater_id__in=Rater.objects.filter(meta__simulated=True).values("id"))
    return qs


# How NULL is written in the COPY output; a text value equal to it would read as missing.
COPY_NULL = "\\N<llmeval-null>"
# Whether study_frames reads through COPY on PostgreSQL (tests compare both paths).
USE_COPY = True


def _frame(qs, columns: list[str], *, types: dict[str, str] | None = None) -> pd.DataFrame:
    """The rows of a ``values_list`` queryset as a frame with ``columns``.

    On PostgreSQL the rows come through ``COPY (query) TO STDOUT`` as CSV, parsed by pandas' C
    reader: no Python object per value, which for 1M ratings saves most of the read. ``types``
    says how to read a column back from its text: "bool" (t/f), "time" (timestamptz, UTC), "str",
    "category" (a label: a categorical of its names, no string per row); anything else is
    numeric. Elsewhere the tuples go into ``DataFrame.from_records``.
    """
    types = types or {}
    labels = [c for c in columns if types.get(c) == "category"]
    if connection.vendor != "postgresql" or not USE_COPY:
        df = pd.DataFrame.from_records(list(qs), columns=columns)
        for col in labels:
            df[col] = df[col].astype("category")
        return df
    sql, params = qs.query.sql_with_params()
    buf = io.BytesIO()
    with connection.cursor() as cursor:
        copy_sql = f"COPY ({sql}) TO STDOUT WITH (FORMAT csv, NULL '{COPY_NULL}')"
        with cursor.cursor.copy(copy_sql, params) as copy:
            for chunk in copy:
                buf.write(chunk)
    text = [c for c in columns if types.get(c) in ("bool", "time", "str")]
    buf.seek(0)
    df = pd.read_csv(
        buf,
        names=columns,
        header=None,
        dtype={**dict.fromkeys(text, str), **dict.fromkeys(labels, "category")},
        keep_default_na=False,
        na_values=[COPY_NULL],
    )
    for col in columns:
        if types.get(col) == "bool":
            df[col] = df[col].eq("t")
        elif types.get(col) == "time":
            df[col] = pd.to_datetime(df[col], utc=True, format="ISO8601").dt.as_unit("us")
    return df


def _ratings_frame(study: Study, *, exclude_simulated: bool) -> pd.DataFrame:
    rows = _submitted_ratings(study, exclude_simulated=exclude_simulated).values_list(
        "id",
        "rater_id",
        "item_id",
        "choice",
        "assignment__is_repeat",
        "assignment__left_is_a",
        "assignment__hint_shown",
        "assignment__served_at",
        "assignment__submitted_at",
        "assignment__active_ms",
    )
    df = _frame(
        rows,
        [
            "rating_id",
            "rater_pk",
            "item_id",
            "choice",
            "is_repeat",
            "left_is_a",
            "hint_shown",
            "served_at",
            "submitted_at",
            "active_ms",
        ],
        types={
            "choice": "category",
            **dict.fromkeys(("is_repeat", "left_is_a", "hint_shown"), "bool"),
            **dict.fromkeys(("served_at", "submitted_at"), "time"),
        },
    )
    if df.empty:
        return df
    df["submitted_at"] = pd.to_datetime(df["submitted_at"], utc=True)
    served = pd.to_datetime(df["served_at"], utc=True)
    # Time on the item: the page's measured active time when there is one, else submit minus
    # serve. Imported ratings carry no real exposure (served == submitted), so a non-positive
    # span means "unknown" rather than "instant". The active time comes from the client: one
    # longer than the item was shown is impossible (a speeder posting active_ms=600000), so the
    # span caps it.
    span = (df["submitted_at"] - served).dt.total_seconds()
    span = span.where(span > 0)
    active = pd.to_numeric(df["active_ms"], errors="coerce") / 1000.0
    duration = active.where(active.notna(), span)
    df["duration_s"] = duration.where(span.isna() | (duration <= span), span).astype(float)
    return df.drop(columns=["served_at", "active_ms"])


def _raters_frame(study: Study) -> pd.DataFrame:
    rows = (
        Rater.objects.filter(assignments__study=study)
        .distinct()
        .values_list("id", "pseudonym", "kind", "pool")
    )
    df = pd.DataFrame.from_records(
        list(rows), columns=["rater_pk", "rater_id", "rater_kind", "pool"]
    )
    for col in ("rater_id", "rater_kind", "pool"):  # merged onto every rating as codes
        df[col] = df[col].astype("category")
    return df


def _items_frame(study: Study) -> pd.DataFrame:
    rows = Item.objects.filter(study=study).values_list(
        "id",
        "question__external_id",
        "question__task_type",
        "response_a__llm__name",
        "response_a__length",
        "response_b__llm__name",
        "response_b__length",
    )
    columns = ["item_id", "question_id", "task_type", "model_a", "len_a", "model_b", "len_b"]
    text = ("question_id", "task_type", "model_a", "model_b")
    return _frame(rows, columns, types=dict.fromkeys(text, "category"))


def study_frames(study: Study, *, exclude_simulated: bool = False) -> StudyFrames:
    """The study's submitted ratings as the statistics' ``star_df`` and ``pair_df``.

    Raters appear by pseudonym only. Judges are raters like any other (rater_kind "judge").
    Both frames are always returned with the contract's columns (empty when the study has no
    ratings of that mode), whatever the study's own mode. ``exclude_simulated`` leaves out the
    raters ``ranking.simulate`` made (``Rater.meta["simulated"]``).
    """
    from ranking.stats.schema import PAIR_COLUMNS, STAR_COLUMNS, empty_pair_df, empty_star_df

    ratings = _ratings_frame(study, exclude_simulated=exclude_simulated)
    if ratings.empty:
        return StudyFrames(empty_star_df(), empty_pair_df())
    base = ratings.merge(_raters_frame(study), on="rater_pk", how="left").merge(
        _items_frame(study), on="item_id", how="left"
    )
    base["task_type"] = _filled(base["task_type"], "")
    pair_mask = base["model_b"].notna() & base["choice"].isin(["A", "B", "tie", "both_bad"])

    star_base = base[base["model_b"].isna()]
    scores = _frame(
        Score.objects.filter(
            rating__assignment__study=study,
            rating__assignment__status=Assignment.Status.SUBMITTED,
            rating__item__response_b__isnull=True,
        ).values_list("rating_id", "criterion_id", "value"),
        ["rating_id", "criterion_pk", "score"],
    )
    if star_base.empty or scores.empty:
        star = empty_star_df()
    else:
        keys = dict(
            Criterion.objects.filter(pk__in=scores["criterion_pk"].unique().tolist()).values_list(
                "pk", "key"
            )
        )
        scores["criterion"] = _names(scores["criterion_pk"], keys)
        star = star_base.merge(scores, on="rating_id", how="inner")
        star = star.rename(columns={"model_a": "model", "len_a": "length"})
        star["score"] = star["score"].astype(float)
        star["length"] = star["length"].fillna(0).astype(np.int64)
        star = star.sort_values(["rating_id", "criterion"], kind="stable").reset_index(drop=True)
        star = star[list(STAR_COLUMNS)]

    pair = base[pair_mask]
    if pair.empty:
        pair = empty_pair_df()
    else:
        pair = pair.assign(
            len_a=pair["len_a"].fillna(0).astype(np.int64),
            len_b=pair["len_b"].fillna(0).astype(np.int64),
        )
        pair = pair.sort_values("rating_id", kind="stable").reset_index(drop=True)
        pair = pair[list(PAIR_COLUMNS)]
    return StudyFrames(_typed(star), _in_name_order(_typed(pair)))


def _in_name_order(pair: pd.DataFrame) -> pd.DataFrame:
    """Orient every pair by model name: A is the model whose name sorts first.

    An item's response A is whichever answer was stored first, which an import or an export
    round trip can change. Points, Elo and Bradley-Terry do not care, but the nominal agreement
    figures (kappa, alpha over A / B / tie / both bad) and the judge confusion tables do: with
    A the stored-first answer, the same ratings gave other figures. Swapping a pair swaps its
    lengths, flips the choice (A <-> B) and the side A was shown on.

    Works on the typed frame (``_typed``): model A and B share their categories, sorted by
    name, so comparing codes compares names, and nothing is hashed or compared per row as text.
    """
    if pair.empty:
        return pair
    a, b = pair["model_a"].cat.codes.to_numpy(), pair["model_b"].cat.codes.to_numpy()
    swap = a > b
    if not swap.any():
        return pair
    out = pair.copy()
    models = pair["model_a"].cat.categories
    out["model_a"] = pd.Categorical.from_codes(np.where(swap, b, a), categories=models)
    out["model_b"] = pd.Categorical.from_codes(np.where(swap, a, b), categories=models)
    la, lb = pair["len_a"].to_numpy(), pair["len_b"].to_numpy()
    out["len_a"], out["len_b"] = np.where(swap, lb, la), np.where(swap, la, lb)
    out["choice"] = _flipped_choices(pair["choice"], swap)
    out["left_is_a"] = pair["left_is_a"].to_numpy(dtype=bool) ^ swap
    return out


def _flipped_choices(choice: pd.Series, swap: np.ndarray) -> pd.Categorical:
    """The choices with A and B exchanged where ``swap``: still a categorical of its used
    labels, sorted (what ``_label`` gives)."""
    old = [str(c) for c in choice.cat.categories]
    labels = sorted({*old, *(("A", "B") if {"A", "B"} & set(old) else ())})
    mirror = {"A": "B", "B": "A"}
    to_new = np.array([labels.index(c) for c in old], dtype=np.int64)
    to_flipped = np.array([labels.index(mirror.get(c, c)) for c in old], dtype=np.int64)
    codes = choice.cat.codes.to_numpy()
    new = np.where(swap, to_flipped[codes], to_new[codes])
    return pd.Categorical.from_codes(new, categories=labels).remove_unused_categories()


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Give the frames the contract's dtypes (the ones the empty frames have too).

    Labels (rater, pool, kind, question, task type, model, criterion, choice) stay categoricals
    of their names, sorted, with only the categories the frame uses: what ``schema.coerce_*``
    would make of the same names as strings, so the report does not hash a string per row again
    (docs/decisions/report-speed.md, seventh round). Model A and B share their categories.
    """
    df = df.copy()
    for col in ("rating_id", "item_id"):
        df[col] = df[col].astype(np.int64)
    for col in ("rater_id", "rater_kind", "pool", "question_id", "task_type", "model", "criterion"):
        if col in df.columns:
            df[col] = _label(df[col])
    if "model_a" in df.columns:
        a, b = _label(df["model_a"]), _label(df["model_b"])
        models = sorted({*a.cat.categories, *b.cat.categories})
        df["model_a"], df["model_b"] = a.cat.set_categories(models), b.cat.set_categories(models)
    if "choice" in df.columns:
        df["choice"] = _label(df["choice"])
    for col in ("is_repeat", "left_is_a"):
        if col in df.columns:
            df[col] = df[col].astype(bool)
    df["hint_shown"] = df["hint_shown"].astype("boolean")
    df["submitted_at"] = pd.to_datetime(df["submitted_at"], utc=True)
    df["duration_s"] = df["duration_s"].astype(float)
    return df


def _label(values: pd.Series) -> pd.Series:
    """A label column as a categorical of its used names (str), sorted."""
    from ranking.stats.schema import used_categories

    if not isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(str).astype("category")
    values = used_categories(values)
    values = values.cat.rename_categories([str(c) for c in values.cat.categories])
    return values.cat.reorder_categories(sorted(values.cat.categories))


def _filled(values: pd.Series, fill: str) -> pd.Series:
    """``values.fillna(fill)``, for a categorical too (``fill`` becomes a category if needed)."""
    categorical = isinstance(values.dtype, pd.CategoricalDtype)
    if categorical and values.isna().any() and fill not in values.cat.categories:
        values = values.cat.add_categories([fill])
    return values.fillna(fill)


def _names(pks: pd.Series, names: dict[int, str]) -> pd.Series:
    """The name of each row's primary key, as a categorical: one lookup per distinct key."""
    codes, uniq = pd.factorize(pks)
    per_key = pd.Categorical([names.get(k) for k in uniq])
    out = pd.Categorical.from_codes(per_key.codes[codes], dtype=per_key.dtype)
    return pd.Series(out, index=pks.index, name=pks.name)


def study_has_ratings(study: Study, n: int) -> bool:
    """Whether the study has at least n submitted ratings; counts no further than n (a million-
    rating study is not counted through to decide whether it is large). Unordered: with the
    model's ordering the LIMIT came after a sort of every rating (after a million-rating import,
    whose tables have no statistics yet, about 2 CPU seconds of PostgreSQL for 20,000 rows)."""
    return _submitted_ratings(study).order_by()[:n].count() >= n


def study_rating_stamp(study: Study) -> tuple[int, str]:
    """(number of submitted ratings, latest change) — changes whenever the report would.

    One aggregate query (count, newest id, newest edit, newest submit) and the newest judge call
    (a run whose outputs all failed to parse adds no rating but changes the data-quality table):
    cheap next to the report.
    """
    agg = _submitted_ratings(study).aggregate(
        count=Count("id"),
        last_update=Max("updated_at"),
        last_submit=Max("assignment__submitted_at"),
        n=Max("id"),
    )
    count = int(agg["count"])
    stamps = [v.isoformat() for v in (agg["last_update"], agg["last_submit"]) if v]
    calls = JudgeCall.objects.filter(run__study=study).aggregate(n=Max("id"))["n"] or 0
    return count, f"{agg['n'] or 0}:{'|'.join(stamps)}:{calls}"


def study_filter_choices(study: Study) -> dict[str, list[tuple[str, str]]]:
    """The values the report's filters can take for this study (for forms and validation)."""
    pools = sorted(
        set(Rater.objects.filter(assignments__study=study).values_list("pool", flat=True))
    )
    pool_labels = dict(Rater.Pool.choices)
    task_types = sorted(
        set(Item.objects.filter(study=study).values_list("question__task_type", flat=True)) - {""}
    )
    criteria = [(c.key, c.label_en) for c in Criterion.objects.filter(rubric_id=study.rubric_id)]
    return {
        "pools": [(p, str(pool_labels.get(p, p))) for p in pools],
        "task_types": [(t, t) for t in task_types],
        "criteria": criteria,
    }


def criterion_max(study: Study) -> dict[str, float]:
    """Full marks per criterion key, from the study's rubric (for the LLMEval-2 total score)."""
    return {
        key: float(hi)
        for key, hi in Criterion.objects.filter(rubric_id=study.rubric_id).values_list(
            "key", "max_score"
        )
    }


def criterion_min(study: Study) -> dict[str, float]:
    """Lowest score per criterion key, from the study's rubric (star-mean intervals stay in it)."""
    return {
        key: float(lo)
        for key, lo in Criterion.objects.filter(rubric_id=study.rubric_id).values_list(
            "key", "min_score"
        )
    }


def judge_run_frame(study: Study, scope: QualityScope | None = None) -> pd.DataFrame:
    """One row per judge run of the study, for the report's price / time / parse-share figures
    (``ranking.stats.judge_report.JUDGE_RUN_COLUMNS``). Counters come from the run itself
    (``judge_run_recount`` keeps them right); seconds are the run's own start to finish.

    Within the report's filters (``scope``): none when they leave judges out (a pool or rater
    kind filter without them); imported judge outputs counted within them. A run's counters
    are the whole run's (a call is not a rating with a pool or a time)."""
    columns = ["rater_id", "n_calls", "n_parsed", "n_parse_failed", "cost", "seconds"]
    if scope is not None and not scope.keeps_judges():
        return pd.DataFrame(columns=columns)
    rows = JudgeRun.objects.filter(study=study).values_list(
        "judge__rater__pseudonym",
        "n_done",
        "n_ok",
        "n_parse_failed",
        "cost",
        "started_at",
        "finished_at",
    )
    records = [
        (rater, done, ok, failed, float(cost or 0), _seconds(start, end))
        for rater, done, ok, failed, cost, start, end in rows
    ]
    ran = {r[0] for r in records}
    records += [r for r in _imported_judge_counts(study, scope) if r[0] not in ran]
    return pd.DataFrame.from_records(records, columns=columns)


def _imported_judge_counts(study: Study, scope: QualityScope | None) -> list[tuple]:
    """Per judge without a run in the study (imported judge outputs): its ratings in scope as
    calls, parsed and unparsed (``Rating.parse_status``); no price or time (NaN)."""
    rows = (
        Rating.objects.filter(
            scope.ratings_q() if scope else Q(), item__study=study, rater__kind=Rater.Kind.JUDGE
        )
        .values("rater__pseudonym")
        .annotate(
            n=Count("id"),
            unparsed=Count("id", filter=Q(parse_status=ParseStatus.UNPARSED)),
        )
        .order_by("rater__pseudonym")
    )
    nan = float("nan")
    return [
        (r["rater__pseudonym"], r["n"], r["n"] - r["unparsed"], r["unparsed"], nan, nan)
        for r in rows
    ]


def _seconds(start, end) -> float:
    return (end - start).total_seconds() if start and end else float("nan")
