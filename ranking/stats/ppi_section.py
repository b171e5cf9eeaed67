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

import warnings
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import ppi
from .arrays import distinct
from .bradley_terry import ELO_SCALE
from .rankings import OVERALL
from .schema import CHOICE_SCORE_A, empty_frame, str_values

PPI_KEYS: tuple[str, ...] = ("ppi", "ppi_curve")
MIN_ITEMS = 10
CURVE_SHARES = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
CURVE_REPEATS = 20

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
    """One row per (rater, rating, criterion incl. overall): item, model, rater kind, score."""
    s = star[~star["is_repeat"]]
    base = pd.DataFrame(
        {
            **_who_and_what(s),
            "model": _labels(s["model"]),
            "criterion": _labels(s["criterion"]),
            "score": s["score"].to_numpy(dtype=float),
        }
    ).dropna(subset=["score"])
    keys = ["rater_id", "rater_kind", "rating_id", "item_id", "model"]
    overall = base.groupby(keys, sort=False, observed=True)["score"].mean().reset_index()
    overall["criterion"] = OVERALL
    return pd.concat([base, overall[base.columns]], ignore_index=True)


def pair_outcomes(pair: pd.DataFrame) -> pd.DataFrame:
    """One row per first pairwise rating: rater, item, models and A's score (1, 0.5, 0)."""
    p = pair[~pair["is_repeat"]]
    return pd.DataFrame(
        {
            **_who_and_what(p),
            "model_a": _labels(p["model_a"]),
            "model_b": _labels(p["model_b"]),
            "score": p["choice"].map(CHOICE_SCORE_A).to_numpy(dtype=float),
        }
    )


def item_table(rows: pd.DataFrame, judge: str, keys: list[str]) -> pd.DataFrame:
    """Per item (and ``keys``): the human mean ``y`` with its rating count, and the judge's
    mean ``f``. NaN where one side did not rate."""
    human = rows[rows["rater_kind"] == "human"]
    h = human.groupby(keys, sort=True).agg(y=("score", "mean"), n_ratings=("rating_id", "nunique"))
    j = rows[rows["rater_id"] == judge].groupby(keys, sort=True)["score"].mean().rename("f")
    out = h.join(j, how="outer").reset_index()
    out["n_ratings"] = out["n_ratings"].fillna(0).astype(np.int64)
    return out[out["f"].notna()]


def judge_order(star_rows: pd.DataFrame, pair_rows: pd.DataFrame) -> list[str]:
    """Judges by number of ratings, most first (ties by name)."""
    counts: dict[str, int] = {}
    for rows in (star_rows, pair_rows):
        j = rows[rows["rater_kind"] == "judge"]
        for name, n in j.groupby("rater_id")["rating_id"].nunique().items():
            counts[str(name)] = counts.get(str(name), 0) + int(n)
    return sorted(counts, key=lambda k: (-counts[k], k))


# --------------------------------------------------------------------------- rows


def mean_row(
    y: npt.NDArray[np.float64],
    f: npt.NDArray[np.float64],
    n_ratings: npt.NDArray[np.int64],
    **labels: str,
) -> dict[str, Any]:
    """One ``ppi`` row for a mean over items: the item table's y, f and n_ratings columns."""
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
    return {**row, **_interval_cells(r.human, r.human_se, r.estimate, r.se, n, per_item)}


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
    # The distinct names first (pd.unique), not a Python loop over every comparison.
    models = sorted(
        set(pd.unique(lab["model_a"].to_numpy())).union(pd.unique(lab["model_b"].to_numpy()))
    )
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
    a = items["model_a"].map(idx).to_numpy(dtype=np.int64)
    b = items["model_b"].map(idx).to_numpy(dtype=np.int64)
    games: np.ndarray = np.bincount(a, w, len(idx)) + np.bincount(b, w, len(idx))
    return games


def _games(items: pd.DataFrame, idx: dict[str, int], col: str) -> ppi.Games:
    return ppi.Games(
        items["model_a"].map(idx).to_numpy(dtype=np.int64),
        items["model_b"].map(idx).to_numpy(dtype=np.int64),
        items[col].to_numpy(dtype=float),
    )


# --------------------------------------------------------------------------- section


def _group_rows(items: pd.DataFrame, by: list[str] | str) -> tuple[pd.Index, list[np.ndarray]]:
    """The groups of ``by`` as iterating ``items.groupby(by, sort=True)`` gives them: their keys
    in sorted order and each group's row positions in their order in ``items`` (a stable sort of
    the group numbers; rows with a missing key belong to no group)."""
    groups = items.groupby(by, sort=True)
    codes = groups.ngroup().fillna(-1).to_numpy(dtype=np.int64)  # NaN: a missing key
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]
    bounds = np.cumsum(np.bincount(codes[order], minlength=groups.ngroups))[:-1]
    return groups.size().index, np.split(order, bounds)


def _mean_rows(
    items: pd.DataFrame, judge: str, statistic: str, by: list[str]
) -> list[dict[str, Any]]:
    """One ``mean_row`` per group of ``by``, in sorted key order, each over its rows' arrays."""
    keys, positions = _group_rows(items, by)
    y = items["y"].to_numpy(dtype=float)
    f = items["f"].to_numpy(dtype=float)
    n_ratings = items["n_ratings"].to_numpy(dtype=np.int64)
    rows = []
    for key, pos in zip(keys, positions, strict=True):
        key = key if isinstance(key, tuple) else (key,)
        labels = dict(zip(by, (str(k) for k in key), strict=True))
        labels.setdefault("criterion", "")
        row = mean_row(y[pos], f[pos], n_ratings[pos], judge=judge, statistic=statistic, **labels)
        rows.append(row)
    return rows


def _judge_tables(
    star_rows: pd.DataFrame, pair_rows: pd.DataFrame, judge: str, rng: np.random.Generator
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``ppi`` rows and the curve rows of one judge."""
    rows: list[dict[str, Any]] = []
    curve: list[dict[str, Any]] = []
    if (star_rows["rater_id"] == judge).any():
        items = item_table(star_rows, judge, ["item_id", "model", "criterion"])
        rows += _mean_rows(items, judge, "star_mean", ["criterion", "model"])
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
    star: pd.DataFrame, pair: pd.DataFrame, *, seed: int = 0
) -> dict[str, pd.DataFrame]:
    """The ``ppi`` and ``ppi_curve`` tables (see the module docstring) from the report's
    coerced, filtered frames. Never raises on thin data: it says "not enough data" instead."""
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
            r, c = _judge_tables(star_rows, pair_rows, judge, rng)
            rows += [{**row, "default_judge": judge == judges[0]} for row in r]
            curve += c
    return {"ppi": _frame(rows, PPI_COLS), "ppi_curve": _frame(curve, CURVE_COLS)}


# --------------------------------------------------------------------------- width curve

# One model's labelled positions, its (Y, f) sum columns and its judge-only f~ (_curve_inputs).
_CurveInputs = tuple[npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.float64]]


def width_curve(
    items: pd.DataFrame, judge: str, statistic: str, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Mean 95% interval width over the models if humans had rated only a random ``share`` of
    the labelled items (the judge keeps rating everything): human-only against combined.

    Each of ``CURVE_REPEATS`` random orders of the labelled item ids gives the humans its first
    k items (one subset serves every model, as a real budget would; the shares are nested)."""
    lab_ids = distinct(items.loc[items["y"].notna(), "item_id"].to_numpy())
    if len(lab_ids) < MIN_ITEMS:
        return []
    ratings = items[items["y"].notna()].drop_duplicates("item_id").set_index("item_id")
    per_item = ratings["n_ratings"].reindex(lab_ids).to_numpy(dtype=float)
    # Each repeat: a random order of the labelled items (``order``), and each item's rank in it.
    n = len(lab_ids)
    order = rng.permuted(np.broadcast_to(np.arange(n), (CURVE_REPEATS, n)), axis=1)
    ks = [max(2, round(share * n)) for share in CURVE_SHARES]
    # The first share each item enters (the shares are nested), per repeat: the share of its
    # position in the repeat's order, scattered to the item.
    at_position = np.searchsorted(np.asarray(ks), np.arange(n), side="right").astype(np.int8)
    first = np.empty(order.shape, np.int8)
    first[np.arange(CURVE_REPEATS)[:, None], order] = at_position
    y, f = items["y"].to_numpy(dtype=float), items["f"].to_numpy(dtype=float)
    item_ids = items["item_id"].to_numpy()
    models = [
        _curve_inputs(y[pos], f[pos], item_ids[pos], lab_ids)
        for pos in _group_rows(items, "model")[1]
    ]
    sums = [_share_sums(first[:, pos], cols, len(ks)) for pos, cols, _ in models]
    # Ratings per share and repeat: whole counts, so exact in any order.
    ratings_so_far = _share_sums(first, per_item[:, None], len(ks))[:, :, 0]
    out = []
    for i, (share, k) in enumerate(zip(CURVE_SHARES, ks, strict=True)):
        w_h, w_p = _curve_widths(models, [s[i] for s in sums])
        out.append(
            {
                "judge": judge,
                "statistic": statistic,
                "share": share,
                "n_human_items": k,
                "n_human_ratings": float(ratings_so_far[i].mean()),
                "width_human": w_h,
                "width_ppi": w_p,
            }
        )
    return out


def _share_sums(first: np.ndarray, cols: np.ndarray, n_shares: int) -> np.ndarray:
    """(shares, repeats, columns): per random order, the sums of ``cols`` over the rows in each
    share's subset. Each row is added once, to the first share it enters (``first``, one
    bincount per column), and the shares, nested, are cumulative sums of those."""
    n_rep = first.shape[0]
    slot = (np.arange(n_rep)[:, None] * (n_shares + 1) + first).ravel()
    per_slot = np.stack(
        [np.bincount(slot, np.tile(c, n_rep), n_rep * (n_shares + 1)) for c in cols.T],
        axis=-1,
    ).reshape(n_rep, n_shares + 1, cols.shape[1])
    return np.cumsum(per_slot[:, :n_shares], axis=1).transpose(1, 0, 2)


def _curve_inputs(
    y: np.ndarray, f: np.ndarray, item_ids: np.ndarray, lab_ids: np.ndarray
) -> _CurveInputs:
    """One model's labelled positions among ``lab_ids``, its (Y, f) columns and its f~, from its
    rows of the item table (y, f and item id)."""
    labelled = ~np.isnan(y)
    y_lab, f_lab = y[labelled], f[labelled]
    cols = np.column_stack(
        [np.ones_like(y_lab), y_lab, f_lab, y_lab * y_lab, f_lab * f_lab, y_lab * f_lab]
    )
    return np.searchsorted(lab_ids, item_ids[labelled]), cols, f[~labelled]


def _curve_widths(models: list[_CurveInputs], sums: list[np.ndarray]) -> tuple[float, float]:
    """Mean widths (human-only, combined) over the models, from each model's (repeats,
    columns) sums over the humans' subset (``_share_sums``)."""
    widths_h, widths_p = [], []
    for (_, cols, fu), subset in zip(models, sums, strict=True):
        n, sy, sf, syy, sff, syf = subset.T
        total = cols.sum(axis=0)
        m = ppi.Moments(
            n, sy, sf, syy, sff, syf,
            n_u=total[0] - n + len(fu),
            su=total[2] - sf + fu.sum(),
            suu=total[4] - sff + (fu * fu).sum(),
        )  # fmt: skip
        r = ppi.mean_from_moments(m)
        widths_h.append(2 * ppi.Z95 * r.human_se)
        widths_p.append(2 * ppi.Z95 * r.se)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a model no subset reached
        return float(np.nanmean(widths_h)), float(np.nanmean(widths_p))
