"""The report's judge-assisted section: PPI++ estimates beside the human-only and judge-only ones.

``ppi_section(star, pair)`` returns two tables (docs/statistics.md "Judge-assisted estimates"):

==========  ==========================================================================================
key         one row is ...
==========  ==========================================================================================
ppi         (judge, statistic, criterion, model): human-only estimate and 95% interval, judge-only
            figure, combined (PPI++) estimate and 95% interval, lambda, human ratings saved at equal
            interval width, and a note when there is not enough data
ppi_curve   (judge, statistic, share): mean interval width over the models when humans rate only
            that share of the items (random subsets, the judge the rest), human-only and combined
==========  ==========================================================================================

Statistics: ``star_mean`` per criterion and ``overall`` (each rating's average over criteria),
``win_rate`` per model (a pairwise outcome scores 1, 0.5 or 0 from the model's side) and
``bt_rating`` (Bradley-Terry on the Elo scale). The unit is the item: an item's human outcome is
the mean of its humans' first ratings, the judge's the mean of that judge's first ratings.
"Labelled" items have both; items only the judge rated are the unlabelled sample. Every judge
(rater of kind "judge") gets its rows; ``default_judge`` marks the one with the most ratings.
"""

from __future__ import annotations

import itertools
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import ppi
from .bradley_terry import ELO_SCALE
from .ppi_curve import MIN_ITEMS as MIN_ITEMS  # re-exported: the notes name it
from .ppi_curve import width_curve
from .ppi_groups import (
    combined_key,
    group_numbers,
    int_codes,
    key_codes,
    positions,
    sort_codes,
)
from .rankings import OVERALL, Bounds
from .schema import CHOICE_SCORE_A, empty_frame, str_values

PPI_KEYS: tuple[str, ...] = ("ppi", "ppi_curve")

PPI_COLS = {
    "judge": "str",
    "default_judge": "bool",
    "statistic": "str",
    "criterion": "str",
    "model": "str",
    "n_human_items": "int64",
    "n_human_ratings": "int64",
    "n_judge_only_items": "int64",
    "human": "float64",
    "human_low": "float64",
    "human_high": "float64",
    "judge_only": "float64",
    "ppi": "float64",
    "ppi_low": "float64",
    "ppi_high": "float64",
    "lam": "float64",
    "saved_items": "float64",
    "saved_ratings": "float64",
    "note": "str",
}
CURVE_COLS = {
    "judge": "str",
    "statistic": "str",
    "share": "float64",
    "n_human_items": "int64",
    "n_human_ratings": "float64",
    "width_human": "float64",
    "width_ppi": "float64",
}

NOTE_FEW = "not enough data: fewer than {n} items rated by both humans and this judge"
NOTE_FLAT = "not enough data: the human ratings do not vary"
NOTE_NO_JUDGE = "not enough data: no LLM judge ratings to combine with"
NOTE_NO_HUMAN = "not enough data: no human ratings (humans must rate a random subset of items)"
NOTE_BT = "not enough data: Bradley-Terry needs human comparisons connecting at least two models"


# --------------------------------------------------------------------------- item outcomes


def _labels(values: pd.Series) -> Any:
    """A label column as the outcome rows keep it: categoricals stay categorical (grouping by
    their codes is much cheaper than hashing a string per row), anything else as strings."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.array.rename_categories([str(c) for c in values.cat.categories])
    return str_values(values)


def _who_and_what(ratings: pd.DataFrame) -> dict[str, Any]:
    """The columns every outcome row starts with: rater, rater kind, rating and item."""
    return {
        "rater_id": _labels(ratings["rater_id"]),
        "rater_kind": _labels(ratings["rater_kind"]),
        "rating_id": ratings["rating_id"].to_numpy(),
        "item_id": ratings["item_id"].to_numpy(),
    }


def star_outcomes(star: pd.DataFrame) -> pd.DataFrame:
    """One row per (rater, rating, criterion incl. overall): item, model, rater kind, score.
    The criterion is a categorical of the names, "overall" included, in sorted order."""
    keep = ~star["is_repeat"].to_numpy(dtype=bool) & star["score"].notna().to_numpy()
    score = star["score"].to_numpy(dtype=float)[keep]
    cols = {k: v[keep] for k, v in _who_and_what(star).items()}
    cols["model"] = _labels(star["model"])[keep]
    # Overall: each rating's mean over its criteria, one row per group of ``keys`` in the order
    # the groups first appear (what ``groupby(keys, sort=False).mean()`` gives).
    keys = ("rater_id", "rater_kind", "rating_id", "item_id", "model")
    key = combined_key([key_codes(pd.Series(cols[k]), sort=False) for k in keys], sort=False)
    valid = key >= 0
    groups = pd.Series(score[valid]).groupby(key[valid], sort=False)
    first = np.empty(groups.ngroups, np.intp)  # one row of each group (all share its key)
    first[groups.ngroup().to_numpy()] = np.flatnonzero(valid)
    out = {k: _append(v, first) for k, v in cols.items()}
    out["criterion"] = _with_overall(_labels(star["criterion"])[keep], len(first))
    out["score"] = np.concatenate([score, groups.mean().to_numpy()])
    return pd.DataFrame(out)


def _append(values: Any, rows: np.ndarray) -> Any:
    """``values`` followed by ``values[rows]`` (a categorical stays one)."""
    if isinstance(values, pd.Categorical):
        codes = np.concatenate([values.codes, values.codes[rows]])
        return pd.Categorical.from_codes(codes, dtype=values.dtype)
    return np.concatenate([values, values[rows]])


def _with_overall(criterion: Any, n_overall: int) -> pd.Categorical:
    """The criterion column followed by ``n_overall`` times "overall", as a categorical of the
    names in sorted order (so its codes group as the names sort)."""
    codes, names = sort_codes(pd.Series(criterion))
    names = np.asarray([str(c) for c in names], dtype=object)
    cats = sorted({*names, OVERALL})
    recode = np.searchsorted(np.asarray(cats, dtype=object), names).astype(np.int64)
    new = np.where(codes >= 0, recode[np.maximum(codes, 0)] if len(names) else -1, -1)
    overall = np.full(n_overall, cats.index(OVERALL))
    return pd.Categorical.from_codes(np.concatenate([new, overall]), categories=cats)


def pair_outcomes(pair: pd.DataFrame) -> pd.DataFrame:
    """One row per first pairwise rating: rater, item, models and A's score (1, 0.5, 0)."""
    keep = ~pair["is_repeat"].to_numpy(dtype=bool)
    cols = {
        **_who_and_what(pair),
        "model_a": _labels(pair["model_a"]),
        "model_b": _labels(pair["model_b"]),
        "score": pair["choice"].map(CHOICE_SCORE_A).to_numpy(dtype=float),
    }
    return pd.DataFrame({k: v[keep] for k, v in cols.items()})


def item_table(rows: pd.DataFrame, judge: str, keys: list[str]) -> pd.DataFrame:
    """Per item (and ``keys``) the judge rated, in sorted key order: the human mean ``y`` with its
    rating count (NaN and 0 where no human rated), and the judge's mean ``f``."""
    key = combined_key([key_codes(rows[k], sort=True) for k in keys], sort=True)
    score = rows["score"].to_numpy(dtype=float)
    human = (rows["rater_kind"] == "human").to_numpy(dtype=bool) & (key >= 0)
    by_judge = (rows["rater_id"] == judge).to_numpy(dtype=bool) & (key >= 0)
    j = pd.Series(score[by_judge]).groupby(key[by_judge], sort=True)
    f = j.mean()
    row = np.empty(len(f), np.intp)  # one row of each judge group (all share its key)
    row[j.ngroup().to_numpy()] = np.flatnonzero(by_judge)
    h = pd.Series(score[human]).groupby(key[human], sort=True)
    y = h.mean()
    ids = rows["rating_id"].to_numpy()[human]
    n_ratings = _distinct_per_group(h.ngroup().to_numpy(), ids, len(y))
    at = y.index.get_indexer(f.index)  # each judged item's human group, -1 if none
    rated, at = at >= 0, np.maximum(at, 0)
    keep = f.notna().to_numpy()
    out = {k: _take(rows[k], row[keep]) for k in keys}
    out["y"] = np.where(rated, y.to_numpy()[at] if len(y) else np.nan, np.nan)[keep]
    out["n_ratings"] = np.where(rated, n_ratings[at] if len(y) else 0, 0)[keep]
    out["f"] = f.to_numpy()[keep]
    return pd.DataFrame(out)


def _take(values: pd.Series, rows: np.ndarray) -> Any:
    return (
        values.array.take(rows)
        if isinstance(values.dtype, pd.CategoricalDtype)
        else (values.to_numpy()[rows])
    )


def _distinct_per_group(groups: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """The number of distinct ``ids`` in each of ``n`` groups (``groups``: each row's)."""
    first = _first_of_runs(groups, ids, n)
    if first is None:  # any order: a hash of the (group, id) pairs
        key = combined_key([(groups, n), int_codes(ids, sort=False)], sort=False)
        first = ~pd.Series(key).duplicated().to_numpy()
    counts: np.ndarray = np.bincount(groups[first], minlength=n)
    return counts


def _first_of_runs(groups: np.ndarray, ids: np.ndarray, n: int, max_run: int = 16) -> Any:
    """Whether each row is the first of its (group, id) pair, without a hash when the ids come
    in a few non-decreasing segments (ratings in order) whose groups do not meet: a repeated pair
    is then two rows of one run of equal ids, at most ``max_run`` rows apart. None otherwise."""
    down = np.flatnonzero(np.diff(ids) < 0) + 1  # where a segment starts again
    if len(down) > 3:
        return None
    bounds = [0, *down.tolist(), len(ids)]
    seen = np.zeros(n, np.int64)
    for a, b in itertools.pairwise(bounds):
        seen += np.bincount(groups[a:b], minlength=n) > 0
    starts = np.flatnonzero(np.diff(ids, prepend=ids[:1] - 1, append=ids[-1:] + 1) != 0)
    longest = int(np.diff(starts).max()) if len(ids) else 0
    if (seen > 1).any() or longest > max_run:
        return None
    repeat = np.zeros(len(ids), bool)
    for k in range(1, longest):
        repeat[k:] |= (ids[k:] == ids[:-k]) & (groups[k:] == groups[:-k])
    return ~repeat


def judge_order(star_rows: pd.DataFrame, pair_rows: pd.DataFrame) -> list[str]:
    """Judges by number of ratings, most first (ties by name)."""
    counts: dict[str, int] = {}
    for rows in (star_rows, pair_rows):
        is_judge = (rows["rater_kind"] == "judge").to_numpy(dtype=bool)
        codes, names = sort_codes(rows["rater_id"][is_judge])
        ids = rows["rating_id"].to_numpy()[is_judge][codes >= 0]
        n_ratings = _distinct_per_group(codes[codes >= 0], ids, len(names))
        for name, n in zip(names[n_ratings > 0], n_ratings[n_ratings > 0], strict=True):
            counts[str(name)] = counts.get(str(name), 0) + int(n)
    return sorted(counts, key=lambda k: (-counts[k], k))


# --------------------------------------------------------------------------- rows


def mean_row(
    y: npt.NDArray[np.float64],
    f: npt.NDArray[np.float64],
    n_ratings: npt.NDArray[np.int64],
    scale: tuple[float, float] = (-np.inf, np.inf),
    **labels: str,
) -> dict[str, Any]:
    """One ``ppi`` row for a mean over items: the item table's y, f and n_ratings columns.
    Both intervals are cut to ``scale`` (the values the mean can take)."""
    labelled = ~np.isnan(y)
    y_lab = y[labelled]
    r = ppi.ppi_mean(y_lab, f[labelled], f[~labelled])
    n = len(y_lab)
    row: dict[str, Any] = {
        **labels,
        "n_human_items": n,
        "n_human_ratings": int(n_ratings[labelled].sum()),
        "n_judge_only_items": len(y) - n,
        "human": float(r.human) if n else np.nan,
        "judge_only": float(r.judge),
        "lam": float(r.lam),
        "note": "",
    }
    flat = n >= 2 and float(np.var(y_lab)) == 0.0
    if n < MIN_ITEMS or flat:
        row["note"] = NOTE_FLAT if n >= MIN_ITEMS else NOTE_FEW.format(n=MIN_ITEMS)
        row["ppi"] = float(r.estimate) if n else np.nan
        return row
    per_item = row["n_human_ratings"] / n
    cells = _interval_cells(r.human, r.human_se, r.estimate, r.se, n, per_item)
    for key in ("human_low", "human_high", "ppi_low", "ppi_high"):
        cells[key] = float(np.clip(cells[key], *scale))
    return {**row, **cells}


def _interval_cells(
    human: np.ndarray,
    human_se: np.ndarray,
    est: np.ndarray,
    se: np.ndarray,
    n: int,
    per_item: float,
) -> dict[str, float]:
    """Both intervals and the ratings saved; ``n`` labelled items of ``per_item`` ratings each."""
    h_lo, h_hi = ppi.interval(human, human_se)
    p_lo, p_hi = ppi.interval(est, se)
    saved = float(ppi.ratings_saved(np.float64(n), h_hi - h_lo, p_hi - p_lo)) + 0.0
    return {
        "human_low": float(h_lo),
        "human_high": float(h_hi),
        "ppi": float(est),
        "ppi_low": float(p_lo),
        "ppi_high": float(p_hi),
        "saved_items": saved,
        "saved_ratings": saved * per_item,
    }


def model_sides(items: pd.DataFrame) -> pd.DataFrame:
    """Pair items seen from each model: (model, y, f, n_ratings) with y, f from its side."""
    a = items.assign(model=items["model_a"])
    b = items.assign(model=items["model_b"], y=1.0 - items["y"], f=1.0 - items["f"])
    return pd.concat([a, b], ignore_index=True)


def bt_rows(items: pd.DataFrame, judge: str) -> list[dict[str, Any]]:
    """``bt_rating`` rows: PPI++ Bradley-Terry over the models the human comparisons reach."""
    lab = items[items["y"].notna()]
    # The distinct names first, not a Python loop over every comparison.
    models = sorted(_distinct_names(lab["model_a"]) | _distinct_names(lab["model_b"]))
    idx = {m: i for i, m in enumerate(models)}
    unl = items[items["y"].isna() & items["model_a"].isin(idx) & items["model_b"].isin(idx)]
    res = None
    if len(models) >= 2 and len(lab) >= MIN_ITEMS:
        res = ppi.ppi_bradley_terry(
            _games(lab, idx, "y"), lab["f"].to_numpy(), _games(unl, idx, "f"), len(models)
        )
    base = {"judge": judge, "statistic": "bt_rating", "criterion": ""}
    if res is None:
        return [{**base, "model": "", "n_human_items": len(lab), "note": NOTE_BT}]
    rows = []
    per_item = float(lab["n_ratings"].sum()) / len(lab)
    n_items, n_ratings = _per_model(lab, idx, None), _per_model(lab, idx, lab["n_ratings"])
    n_unl = _per_model(unl, idx, None)
    for m, i in idx.items():
        row = {
            **base,
            "model": m,
            "n_human_items": int(n_items[i]),
            "n_human_ratings": int(n_ratings[i]),
            "n_judge_only_items": int(n_unl[i]),
            "human": 1500.0 + ELO_SCALE * res.human[i],
            "judge_only": 1500.0 + ELO_SCALE * res.judge[i],
            "lam": res.lam,
            "note": "",
        }
        h, p = res.human[i] * ELO_SCALE, res.strength[i] * ELO_SCALE
        cells = _interval_cells(
            1500.0 + h,
            res.human_se[i] * ELO_SCALE,
            1500.0 + p,
            res.se[i] * ELO_SCALE,
            len(lab),
            per_item,
        )
        rows.append({**row, **cells})
    return rows


def _per_model(items: pd.DataFrame, idx: dict[str, int], weights: pd.Series | None) -> np.ndarray:
    """Games (or the sum of ``weights``) per model, either side."""
    w = None if weights is None else weights.to_numpy(dtype=float)
    a, b = _model_index(items["model_a"], idx), _model_index(items["model_b"], idx)
    games: np.ndarray = np.bincount(a, w, len(idx)) + np.bincount(b, w, len(idx))
    return games


def _games(items: pd.DataFrame, idx: dict[str, int], col: str) -> ppi.Games:
    return ppi.Games(
        _model_index(items["model_a"], idx),
        _model_index(items["model_b"], idx),
        items[col].to_numpy(dtype=float),
    )


def _distinct_names(values: pd.Series) -> set[Any]:
    """The values a column holds (a categorical's used categories: no hash of a name per row)."""
    if isinstance(values.dtype, pd.CategoricalDtype) and not values.isna().any():
        codes = values.cat.codes.to_numpy()
        used = np.flatnonzero(np.bincount(codes, minlength=len(values.cat.categories)))
        return set(values.cat.categories[used])
    return set(pd.unique(values.to_numpy()))


def _model_index(values: pd.Series, idx: dict[str, int]) -> npt.NDArray[np.int64]:
    """Each row's model number in ``idx`` (every row's model is in it)."""
    if isinstance(values.dtype, pd.CategoricalDtype) and not values.isna().any():
        table = np.array([idx.get(c, -1) for c in values.cat.categories], dtype=np.int64)
        coded: npt.NDArray[np.int64] = table[values.cat.codes.to_numpy()]
        return coded
    out: npt.NDArray[np.int64] = values.map(idx).to_numpy(dtype=np.int64)
    return out


# --------------------------------------------------------------------------- section


def _mean_rows(
    items: pd.DataFrame, judge: str, statistic: str, by: list[str], bounds: Bounds | None = None
) -> list[dict[str, Any]]:
    """One ``mean_row`` per group of ``by``, in sorted key order, each over its rows' arrays.
    Intervals are cut to the scale: [0, 1] for win rates; for star means the criterion's range in
    ``bounds`` (``overall``: the mean of the criteria's), widened to the values seen, unbounded
    where the rubric gives none (docs/statistics.md)."""
    numbers, keys = group_numbers(items, by)
    y = items["y"].to_numpy(dtype=float)
    f = items["f"].to_numpy(dtype=float)
    n_ratings = items["n_ratings"].to_numpy(dtype=np.int64)
    rows = []
    for key, pos in zip(keys, positions(numbers, len(keys)), strict=True):
        labels = dict(zip(by, (str(k) for k in key), strict=True))
        labels.setdefault("criterion", "")
        scale = _scale(statistic, labels["criterion"], bounds or {}, y[pos], f[pos])
        row = mean_row(
            y[pos], f[pos], n_ratings[pos], scale, judge=judge, statistic=statistic, **labels
        )
        rows.append(row)
    return rows


def _scale(
    statistic: str, criterion: str, bounds: Bounds, y: np.ndarray, f: np.ndarray
) -> tuple[float, float]:
    """The values a mean of ``statistic`` can take (see ``_mean_rows``)."""
    if statistic == "win_rate":
        return 0.0, 1.0
    lo, hi = bounds.get(criterion, (-np.inf, np.inf))
    if criterion == OVERALL and bounds and OVERALL not in bounds:
        lo = float(np.mean([b[0] for b in bounds.values()]))
        hi = float(np.mean([b[1] for b in bounds.values()]))
    seen = np.concatenate([y[~np.isnan(y)], f[~np.isnan(f)]])
    if len(seen):
        lo, hi = min(float(lo), float(seen.min())), max(float(hi), float(seen.max()))
    return float(lo), float(hi)


def _judge_tables(
    star_rows: pd.DataFrame,
    pair_rows: pd.DataFrame,
    judge: str,
    rng: np.random.Generator,
    bounds: Bounds | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``ppi`` rows and the curve rows of one judge."""
    rows: list[dict[str, Any]] = []
    curve: list[dict[str, Any]] = []
    if (star_rows["rater_id"] == judge).any():
        items = item_table(star_rows, judge, ["item_id", "model", "criterion"])
        rows += _mean_rows(items, judge, "star_mean", ["criterion", "model"], bounds)
        overall = items[items["criterion"] == OVERALL]
        curve += width_curve(overall, judge, "star_mean", rng)
    if (pair_rows["rater_id"] == judge).any():
        items = item_table(pair_rows, judge, ["item_id", "model_a", "model_b"])
        sides = model_sides(items)
        rows += _mean_rows(sides, judge, "win_rate", ["model"])
        rows += bt_rows(items, judge)
        curve += width_curve(sides, judge, "win_rate", rng)
    return rows, curve


def _note_row(note: str) -> dict[str, Any]:
    return {"judge": "", "statistic": "", "criterion": "", "model": "", "note": note}


def _frame(rows: list[dict[str, Any]], cols: dict[str, str]) -> pd.DataFrame:
    if not rows:
        return empty_frame(cols)
    out = pd.DataFrame.from_records(rows)
    for col, dtype in cols.items():
        if col not in out.columns:
            out[col] = np.nan
        if dtype == "int64":
            out[col] = out[col].fillna(0).astype(np.int64)
        elif dtype == "str":
            out[col] = out[col].fillna("").astype(str)
        elif dtype == "bool":
            out[col] = out[col].eq(True)
        else:
            out[col] = out[col].astype(float)
    return out[list(cols)]


def ppi_section(
    star: pd.DataFrame, pair: pd.DataFrame, *, seed: int = 0, bounds: Bounds | None = None
) -> dict[str, pd.DataFrame]:
    """The ``ppi`` and ``ppi_curve`` tables (see the module docstring) from the report's
    coerced, filtered frames. Never raises on thin data: it says "not enough data" instead.
    ``bounds``: the rubric's (min, max) per criterion (``rankings.scale_bounds``)."""
    star_rows, pair_rows = star_outcomes(star), pair_outcomes(pair)
    judges = judge_order(star_rows, pair_rows)
    has_human = (star_rows["rater_kind"] == "human").any() or (
        pair_rows["rater_kind"] == "human"
    ).any()
    rows: list[dict[str, Any]] = []
    curve: list[dict[str, Any]] = []
    if star_rows.empty and pair_rows.empty:
        pass  # no ratings at all: empty tables, like every other table of the report
    elif not judges:
        rows.append(_note_row(NOTE_NO_JUDGE))
    elif not has_human:
        rows.append(_note_row(NOTE_NO_HUMAN))
    else:
        rng = np.random.default_rng([seed, zlib.crc32(b"ppi_curve")])
        for judge in judges:
            r, c = _judge_tables(star_rows, pair_rows, judge, rng, bounds)
            rows += [{**row, "default_judge": judge == judges[0]} for row in r]
            curve += c
    return {"ppi": _frame(rows, PPI_COLS), "ppi_curve": _frame(curve, CURVE_COLS)}
