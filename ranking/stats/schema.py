"""Column contract between the Django selectors and the statistics.

The selectors build two frames from the database; every function in ``ranking.stats`` reads only
these columns. ``coerce_star`` / ``coerce_pair`` check that the columns are present and give them
the dtypes the statistics rely on, so that an empty frame or one built from ``values()`` (object
columns) behaves exactly like a frame built by the synthetic generator. A label column ("str"
below) may also come as a categorical of its names, as ``selectors.study_frames`` delivers them:
the coerced frame is then the one the same names as strings give (unused categories dropped,
categories sorted), without a string per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

# Column -> dtype of the two frames. The first and last columns are common to both.
_RATING_HEAD = {
    "rating_id": "int64",
    "rater_id": "str",
    "rater_kind": "str",
    "pool": "str",
    "item_id": "int64",
    "question_id": "str",
    "task_type": "str",
}
_RATING_TAIL = {
    "is_repeat": "bool",
    "submitted_at": "datetime64[ns, UTC]",
    "hint_shown": "boolean",
    "duration_s": "float64",
}
STAR_DTYPES: dict[str, str] = {
    **_RATING_HEAD,
    "model": "str",
    "criterion": "str",
    "score": "float64",
    **_RATING_TAIL,
    "length": "int64",
}
PAIR_DTYPES: dict[str, str] = {
    **_RATING_HEAD,
    "model_a": "str",
    "model_b": "str",
    "len_a": "int64",
    "len_b": "int64",
    "choice": "str",
    "left_is_a": "bool",
    **_RATING_TAIL,
}
STAR_COLUMNS: tuple[str, ...] = tuple(STAR_DTYPES)
PAIR_COLUMNS: tuple[str, ...] = tuple(PAIR_DTYPES)

POOLS: tuple[str, ...] = ("onsite", "crowd", "public", "judge")
RATER_KINDS: tuple[str, ...] = ("human", "judge")
CHOICES: tuple[str, ...] = ("A", "B", "tie", "both_bad")

# Score of a pairwise choice seen from response A. "both_bad" is a draw: neither answer is
# preferred, which is how the paper's Table 3 (win / draw / loss only) and the Points system
# (Equation 2 knows only win, draw, loss) treat it. See docs/statistics.md.
CHOICE_SCORE_A: dict[str, float] = {"A": 1.0, "B": 0.0, "tie": 0.5, "both_bad": 0.5}


def _check(df: pd.DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name} is missing columns: {', '.join(missing)}")


def _to_utc(values: pd.Series) -> pd.Series:
    out = pd.to_datetime(values, utc=True)
    return out


def _as_category(values: pd.Series, categories: list[str] | None = None) -> pd.Series:
    """Low-cardinality labels become categoricals: grouping and coding them is then cheap, which
    matters because the report groups 300k-row frames by these columns dozens of times."""
    if isinstance(values.dtype, pd.CategoricalDtype) and categories is None:
        # The selectors' frames (``study_frames``): the sorted names of the values present, as
        # a string column would give them, without a string per row.
        values = used_categories(values)
        values = values.cat.rename_categories([str(c) for c in values.cat.categories])
        return values.cat.reorder_categories(sorted(values.cat.categories))
    if categories is None and not isinstance(values.dtype, pd.CategoricalDtype):
        # Strings without missing values (the usual frames): one factorisation, whose sorted
        # categories are the sorted names the general path below computes. The column's own
        # array of Python objects is factorised (what ``pd.Categorical`` does, without its
        # missing-value pass over a string column first).
        codes, uniq = pd.factorize(values.to_numpy(dtype=object), sort=True)
        if (codes >= 0).all() and all(isinstance(c, str) for c in uniq):
            # The categories' dtype as the constructor gives it: the column's (str or object).
            cat = pd.Categorical.from_codes(codes, categories=pd.Index(uniq, dtype=values.dtype))
            return pd.Series(cat, index=values.index, name=values.name)
    values = values.astype(str)
    if categories is None:
        categories = sorted(pd.unique(values.to_numpy()))
    return values.astype(pd.CategoricalDtype(categories))


def used_categories(values: pd.Series) -> pd.Series:
    """A categorical column without the categories no row uses (a filtered frame keeps them),
    by a count per code: ``remove_unused_categories`` sorts every code to find them."""
    cat = values.array
    assert isinstance(cat, pd.Categorical)
    codes = cat.codes
    used = np.bincount(codes[codes >= 0], minlength=len(cat.categories)) > 0
    if used.all():
        return values
    remap = np.full(len(used) + 1, -1, dtype=codes.dtype)  # the last entry: -1 stays missing
    remap[np.flatnonzero(used)] = np.arange(int(used.sum()), dtype=codes.dtype)
    kept = pd.CategoricalDtype(cat.categories[used])
    out = pd.Categorical.from_codes(remap[codes], dtype=kept)
    return pd.Series(out, index=values.index, name=values.name)


def _coerce_common(df: pd.DataFrame | None, dtypes: dict[str, str], name: str) -> pd.DataFrame:
    """A checked copy of ``df`` (the empty frame when ``None``) with the common columns typed."""
    if df is None or (len(df) == 0 and len(df.columns) == 0):
        df = empty_frame(dtypes)
    _check(df, tuple(dtypes), name)
    # Copy-on-write (pandas 3): the columns assigned below never reach the caller's frame, so
    # the shallow copy is enough (a deep one copies every column of 1M rows first).
    df = df.copy(deep=False)
    df["rating_id"] = df["rating_id"].astype(np.int64)
    df["item_id"] = df["item_id"].astype(np.int64)
    # Question ids are only factorised (by first appearance): a categorical one stays one.
    question = df["question_id"]
    categorical = isinstance(question.dtype, pd.CategoricalDtype)
    df["question_id"] = _as_category(question) if categorical else question.astype(str)
    for col in ("rater_id", "rater_kind", "pool", "task_type"):
        df[col] = _as_category(df[col])
    df["is_repeat"] = df["is_repeat"].fillna(False).astype(bool)
    df["submitted_at"] = _to_utc(df["submitted_at"])
    # hint_shown is three-valued (True / False / unknown): pandas' nullable boolean.
    df["hint_shown"] = df["hint_shown"].astype("boolean")
    df["duration_s"] = pd.to_numeric(df["duration_s"], errors="coerce").astype(float)
    return df


def coerce_star(df: pd.DataFrame | None) -> pd.DataFrame:
    """Return ``df`` with the star columns checked and typed (an empty frame when ``None``)."""
    df = _coerce_common(df, STAR_DTYPES, "star_df")
    df["model"] = _as_category(df["model"])
    df["criterion"] = _as_category(df["criterion"])
    df["score"] = pd.to_numeric(df["score"], errors="coerce").astype(float)
    df["length"] = pd.to_numeric(df["length"], errors="coerce").fillna(0).astype(np.int64)
    return df


def _labelled(values: pd.Series) -> bool:
    """A categorical of strings with no missing value."""
    return (
        isinstance(values.dtype, pd.CategoricalDtype)
        and all(isinstance(c, str) for c in values.cat.categories)
        and not bool((values.cat.codes < 0).any())
    )


def _shared_categories(a: pd.Series, b: pd.Series) -> tuple[pd.Series, pd.Series]:
    """``a`` and ``b`` as categoricals sharing one sorted category list (so that their codes
    are the same models): one factorisation of both columns when they are strings without
    missing values, else through ``str`` as a string column always was."""
    if _labelled(a) and _labelled(b):
        # Categoricals of names (the selectors' frames): their used categories recoded to the
        # union, sorted, as the factorisation below gives it for the same names as strings.
        a, b = used_categories(a), used_categories(b)
        dtype = pd.CategoricalDtype(sorted({*a.cat.categories, *b.cat.categories}))
        return a.cat.set_categories(dtype.categories), b.cat.set_categories(dtype.categories)
    # Each column factorised as its own array of objects (no concatenated copy), the two sets
    # of names merged and sorted: the sorted names a factorisation of both columns gives.
    (ca, ua), (cb, ub) = (pd.factorize(v.to_numpy(object)) for v in (a, b))
    if (ca < 0).any() or (cb < 0).any() or not all(isinstance(u, str) for u in (*ua, *ub)):
        sa, sb = a.astype(str), b.astype(str)
        models = sorted(set(pd.unique(sa.to_numpy())).union(pd.unique(sb.to_numpy())))
        return _as_category(sa, models), _as_category(sb, models)
    names = pd.Index(sorted({*ua, *ub}), dtype=object)
    dtype = pd.CategoricalDtype([str(u) for u in names])

    def column(codes: np.ndarray, uniq: np.ndarray, like: pd.Series) -> pd.Series:
        cat = pd.Categorical.from_codes(names.get_indexer(uniq)[codes], dtype=dtype)
        return pd.Series(cat, index=like.index, name=like.name)

    return column(ca, ua, a), column(cb, ub, b)


def _choice_codes(choice: pd.Series) -> npt.NDArray[np.intp]:
    """The index of each row's choice in ``CHOICES`` (-1 when missing or unknown); a categorical
    column is looked up once per category."""
    known = pd.Index(list(CHOICES))
    codes: npt.NDArray[np.intp]
    if isinstance(choice.dtype, pd.CategoricalDtype):
        per_category = np.append(known.get_indexer(choice.cat.categories.astype(object)), -1)
        codes = per_category[choice.cat.codes.to_numpy()]
    else:
        codes = known.get_indexer(choice.to_numpy(object))
    return codes


def coerce_pair(df: pd.DataFrame | None) -> pd.DataFrame:
    """Return ``df`` with the pairwise columns checked and typed (an empty frame when ``None``)."""
    df = _coerce_common(df, PAIR_DTYPES, "pair_df")
    df["model_a"], df["model_b"] = _shared_categories(df["model_a"], df["model_b"])
    # One lookup per row in the fixed choices; anything else (missing included) is refused.
    codes = _choice_codes(df["choice"])
    if (codes < 0).any():
        text = df["choice"].astype(str)
        bad = sorted(text[~text.isin(CHOICES)].unique())[:5]
        raise ValueError(f"pair_df has choices outside {CHOICES}: {bad}")
    choice = pd.Categorical.from_codes(codes, categories=list(CHOICES))
    df["choice"] = pd.Series(choice, index=df.index)
    df["left_is_a"] = df["left_is_a"].fillna(True).astype(bool)
    df["len_a"] = pd.to_numeric(df["len_a"], errors="coerce").fillna(0).astype(np.int64)
    df["len_b"] = pd.to_numeric(df["len_b"], errors="coerce").fillna(0).astype(np.int64)
    return df


def concat_aligned(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate frames, first giving categorical columns the union of their categories (plain
    ``pd.concat`` would fall back to slow object columns when the categories differ)."""
    frames = [f for f in frames if f is not None]
    if len(frames) < 2:
        return frames[0].reset_index(drop=True) if frames else pd.DataFrame()
    cols = set(frames[0].columns).intersection(*(f.columns for f in frames[1:]))
    frames = [f.copy() for f in frames]
    for col in cols:
        dtypes = [f[col].dtype for f in frames]
        if not any(isinstance(d, pd.CategoricalDtype) for d in dtypes):
            continue
        cats: set[str] = set()
        for f in frames:
            v = f[col]
            cats |= (
                set(v.cat.categories)
                if isinstance(v.dtype, pd.CategoricalDtype)
                else set(v.astype(str))
            )
        dtype = pd.CategoricalDtype(sorted(str(c) for c in cats))
        for f in frames:
            f[col] = (
                f[col].astype(str).astype(dtype)
                if not isinstance(f[col].dtype, pd.CategoricalDtype)
                else f[col].cat.set_categories(dtype.categories)
            )
    return pd.concat(frames, ignore_index=True)


def empty_star_df() -> pd.DataFrame:
    """An empty star frame with the contract's columns and dtypes."""
    return empty_frame(STAR_DTYPES)


def empty_pair_df() -> pd.DataFrame:
    """An empty pairwise frame with the contract's columns and dtypes."""
    return empty_frame(PAIR_DTYPES)


def empty_frame(columns: dict[str, str]) -> pd.DataFrame:
    """An empty result table with the given column -> dtype mapping."""
    return pd.DataFrame({c: pd.Series([], dtype=t) for c, t in columns.items()})


def rows_frame(rows: Sequence[tuple[Any, ...]], columns: dict[str, str]) -> pd.DataFrame:
    """Result rows as a table with the given columns; the typed empty table when there are none
    (so that an empty result keeps its dtypes)."""
    if not rows:
        return empty_frame(columns)
    return pd.DataFrame(rows, columns=list(columns))


def time_ordered(df: pd.DataFrame) -> pd.DataFrame:
    """The rows in the order they were given: by ``submitted_at``, then ``rating_id`` (stable)."""
    at = df["submitted_at"]
    if at.isna().any() or not hasattr(at.array, "asi8"):  # NaT: pandas puts it last
        return df.sort_values(["submitted_at", "rating_id"], kind="stable")
    # The same stable order from one integer lexsort (cheaper than sorting the frame).
    return df.take(np.lexsort((df["rating_id"].to_numpy(), at.array.asi8)))


def str_values(values: pd.Series) -> np.ndarray:
    """The column as an array of Python strings; cheap for categoricals (one str per category,
    not per row), which matters on 1M-row frames."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = np.array([str(c) for c in values.cat.categories] + [""], dtype=object)
        strings: npt.NDArray[np.object_] = cats[values.cat.codes.to_numpy()]
        return strings
    as_str: npt.NDArray[np.object_] = values.astype(str).to_numpy(dtype=object)
    return as_str


def codes_and_names(values: pd.Series) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.object_]]:
    """(integer code per row, name per code) with the names in sorted order, as
    ``pd.factorize(str_values(values), sort=True)`` gives them, but without hashing a string per
    row for a categorical (the coerced frames' label columns): its codes are used as they are
    (its categories are sorted by ``_as_category``; unused ones keep their code). Codes order the
    rows as the names sort."""
    if isinstance(values.dtype, pd.CategoricalDtype) and not values.isna().any():
        names = np.array([str(c) for c in values.cat.categories], dtype=object)
        if len(names) < 2 or bool(np.all(names[:-1] < names[1:])):
            return values.cat.codes.to_numpy().astype(np.int64), names
    codes, uniq = pd.factorize(str_values(values), sort=True)
    return codes.astype(np.int64), np.asarray(uniq, dtype=object)
