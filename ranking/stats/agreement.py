"""Ground truth, accuracy, consistency and chance-corrected agreement.

Star and pairwise ratings are first turned into one long table of *judgements* (one row per rating
and criterion) so that every statistic here treats both modes, and humans and LLM judges, alike:

* star: one judgement per (rating, criterion); ``score`` is the stars, ``value`` the same number;
* pairwise: one judgement per rating with criterion ``"pairwise"``; ``score`` is the choice scored
  from A's side (A 1, tie 0.5, both_bad 0.5, B 0) and ``value`` the choice itself coded
  A=0, B=1, tie=2, both_bad=3, so that consistency and nominal agreement see four categories.

Definitions and the choices made where the paper is silent are in docs/statistics.md.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from .grouped import counted_shares, known_units, remember_units, unit_keys
from .intervals import alpha_batch, fleiss_batch, patterns
from .rater_facts import RaterFacts
from .schema import CHOICE_SCORE_A, CHOICES, codes_and_names, concat_aligned, empty_frame
from .unit_agreement import agreement_rows, mean_cohen_codes

PAIRWISE_CRITERION = "pairwise"
_CHOICE_CODE = {c: i for i, c in enumerate(CHOICES)}

JUDGEMENT_COLUMNS = {
    "mode": "str",
    "rating_id": "int64",
    "rater_id": "str",
    "rater_kind": "str",
    "pool": "str",
    "item_id": "int64",
    "criterion": "str",
    "score": "float64",
    "value": "float64",
    "is_repeat": "bool",
    "is_first": "bool",
    "submitted_at": "datetime64[ns, UTC]",
    "hint_shown": "boolean",
}


def judgements(star_df: pd.DataFrame, pair_df: pd.DataFrame) -> pd.DataFrame:
    """Long table of judgements from both modes (see module docstring).

    ``is_first`` marks a rater's first rating of an item: the earliest non-repeat rating
    (by ``submitted_at``, then ``rating_id``). Only these enter the ground truth and agreement;
    a duplicate non-repeat rating (a data defect) is therefore treated like a repeat.
    """
    parts = []
    if len(star_df):
        s = star_df[
            [
                "rating_id",
                "rater_id",
                "rater_kind",
                "pool",
                "item_id",
                "criterion",
                "score",
                "is_repeat",
                "submitted_at",
                "hint_shown",
            ]
        ].copy()
        s["value"] = s["score"]
        s["mode"] = _constant(len(s), "star", ["pairwise", "star"])
        parts.append(s)
    if len(pair_df):
        p = pair_df[
            [
                "rating_id",
                "rater_id",
                "rater_kind",
                "pool",
                "item_id",
                "is_repeat",
                "submitted_at",
                "hint_shown",
            ]
        ].copy()
        p["criterion"] = _constant(len(p), PAIRWISE_CRITERION, [PAIRWISE_CRITERION])
        p["score"] = pair_df["choice"].map(CHOICE_SCORE_A).to_numpy(dtype=float)
        p["value"] = pair_df["choice"].map(_CHOICE_CODE).to_numpy(dtype=float)
        p["mode"] = _constant(len(p), "pairwise", ["pairwise", "star"])
        parts.append(p)
    if not parts:
        return empty_frame(JUDGEMENT_COLUMNS)
    j = concat_aligned(parts)
    j = j[j["score"].notna()].reset_index(drop=True)
    key = unit_keys(j)
    j["is_first"] = _first_flags(j, key)
    out = j[list(JUDGEMENT_COLUMNS)]
    remember_units(out, key)
    return out


def _first_flags(j: pd.DataFrame, key: npt.NDArray[np.int64] | None = None) -> np.ndarray:
    """True on the earliest non-repeat rating (by ``submitted_at``, then ``rating_id``) of each
    (mode, rater, item, criterion): one integer key and a stable lexsort instead of sorting the
    frame and dropping duplicates on four columns (same rows, a fraction of the time)."""
    at = j["submitted_at"]
    # NaT sorts last in pandas but first as an integer: such frames keep the frame path.
    if at.isna().any() or not hasattr(at.array, "asi8"):
        order = j.sort_values(["submitted_at", "rating_id"], kind="stable")
        cand = order[~order["is_repeat"]]
        first = cand.drop_duplicates(["mode", "rater_id", "item_id", "criterion"]).index
        flags = np.zeros(len(j), dtype=bool)
        flags[first] = True
        return flags
    key = unit_keys(j) if key is None else key
    flags = ~j["is_repeat"].to_numpy(bool)
    # A key rated once (not as a repeat) is its own first rating: only the others need the
    # time order, usually a few percent of the rows.
    again = flags.copy()
    again[flags] = pd.Series(key[flags]).duplicated(keep=False).to_numpy()
    rows = np.flatnonzero(again)
    if len(rows):
        order = rows[np.lexsort((j["rating_id"].to_numpy()[rows], at.array.asi8[rows]))]
        _, first = np.unique(key[order], return_index=True)
        flags[rows] = False
        flags[order[first]] = True
    return np.asarray(flags, dtype=bool)


def _constant(n: int, value: str, categories: list[str]) -> pd.Categorical:
    """A categorical column of ``n`` times ``value`` (from codes: no string per row)."""
    code = categories.index(value)
    return pd.Categorical.from_codes(np.full(n, code, dtype=np.int8), categories=categories)


# ------------------------------------------------------------------ ground truth / accuracy


def ground_truth(j: pd.DataFrame, *, ddof: int = 0) -> pd.DataFrame:
    """Ground truth per (mode, item, criterion): mean and std of all raters' first ratings.

    ``ddof=0``: sigma is the population standard deviation of the ratings the item received
    (they are all the ratings there are, not a sample); docs/statistics.md explains the choice.
    """
    f = j[j["is_first"]]
    g = f.groupby(["mode", "item_id", "criterion"], sort=False)["score"]
    out = g.agg(gt="mean", n="size").reset_index()
    out["sigma"] = g.std(ddof=ddof).to_numpy()
    return out


def accuracy_flags(j: pd.DataFrame, *, ddof: int = 0, min_raters: int = 2) -> pd.DataFrame:
    """First-rating judgements with their ground truth and an ``accurate`` flag.

    A judgement is accurate when |score - gt| < sigma, or score == gt when sigma == 0. Units
    (item, criterion) with fewer than ``min_raters`` first ratings are left out: with one rating
    the rater would only be compared with itself.
    """
    # ``ground_truth`` per row by its group number instead of merging it back on three keys
    # (same groups, same cython mean and std; rows and columns as the merge gave them).
    f = j[j["is_first"]].reset_index(drop=True)
    g = f.groupby(["mode", "item_id", "criterion"], sort=False)["score"]
    ids = g.ngroup().to_numpy()
    gt = g.agg(gt="mean", n="size")
    n = gt["n"].to_numpy()[ids]
    keep = n >= min_raters
    f = f[keep].reset_index(drop=True)
    ids = ids[keep]
    f["gt"] = gt["gt"].to_numpy()[ids]
    f["n"] = n[keep]
    f["sigma"] = g.std(ddof=ddof).to_numpy()[ids]
    diff = (f["score"] - f["gt"]).abs()
    # A tiny tolerance: gt is a float mean, so "score == gt" must survive rounding.
    zero = f["sigma"] <= 1e-12
    f["accurate"] = np.where(zero, diff <= 1e-9, diff < f["sigma"])
    return f


_ACC_RATER_COLS = {
    "rater_id": "str",
    "rater_kind": "str",
    "pool": "str",
    "mode": "str",
    "n_ratings": "int64",
    "n_judgements": "int64",
    "n_accurate": "int64",
    "accuracy": "float64",
}


def accuracy_by_rater(
    flags: pd.DataFrame,
    j: pd.DataFrame,
    *,
    min_ratings: int = 5,
    facts: RaterFacts | None = None,
) -> pd.DataFrame:
    """Accuracy per rater and mode; raters with < ``min_ratings`` first ratings are left out.
    ``facts``: ``RaterFacts.of(j)`` when the caller has them already."""
    if flags.empty:
        return empty_frame(_ACC_RATER_COLS)
    facts = facts or RaterFacts.of(j)
    g = flags.groupby(["rater_id", "mode"])["accurate"].agg(["size", "sum"]).reset_index()
    g.columns = ["rater_id", "mode", "n_judgements", "n_accurate"]
    g = g.merge(facts.counts, on=["rater_id", "mode"], how="left")
    g = g[g["n_ratings"] >= min_ratings]
    g["accuracy"] = g["n_accurate"] / g["n_judgements"]
    g = g.merge(facts.meta, on="rater_id", how="left")
    g["n_accurate"] = g["n_accurate"].astype(np.int64)
    return g[list(_ACC_RATER_COLS)].sort_values(["mode", "pool", "rater_id"]).reset_index(drop=True)


def _distribution(values: pd.core.groupby.SeriesGroupBy) -> pd.DataFrame:
    return values.agg(
        n_raters="size",
        mean="mean",
        median="median",
        min="min",
        q1=lambda s: s.quantile(0.25),
        q3=lambda s: s.quantile(0.75),
        max="max",
    )


_POOL_COLS = {
    "mode": "str",
    "pool": "str",
    "n_raters": "int64",
    "mean": "float64",
    "median": "float64",
    "min": "float64",
    "q1": "float64",
    "q3": "float64",
    "max": "float64",
    "pooled": "float64",
    "n_judgements": "int64",
}


def summarise_by_pool(by_rater: pd.DataFrame, value: str, num: str, den: str) -> pd.DataFrame:
    """Box-plot figures of a per-rater share per (mode, pool) plus the pooled (micro) share."""
    if by_rater.empty:
        return empty_frame(_POOL_COLS)
    keys = ["mode", "pool"]
    dist = _distribution(by_rater.groupby(keys)[value])
    sums = by_rater.groupby(keys)[[num, den]].sum()
    dist["pooled"] = sums[num] / sums[den]
    dist["n_judgements"] = sums[den].astype(np.int64)
    return dist.reset_index()[list(_POOL_COLS)]


# The groups of the per-criterion tables (pooled over the raters kept).
_CRITERION_KEYS = {"mode": "str", "pool": "str", "criterion": "str"}


def _pairs_kept(flags: pd.DataFrame, by_rater: pd.DataFrame) -> np.ndarray:
    """Rows of ``flags`` whose (rater, mode) is a row of ``by_rater`` (one row per pair)."""
    pairs = pd.MultiIndex.from_arrays(
        [by_rater["rater_id"].astype(str), by_rater["mode"].astype(str)]
    )
    rater, raters = codes_and_names(flags["rater_id"])
    mode, modes = codes_and_names(flags["mode"])
    table = pd.MultiIndex.from_product([raters, modes]).isin(pairs)
    return np.asarray(table.reshape(len(raters), len(modes))[rater, mode])


def accuracy_by_criterion(flags: pd.DataFrame, by_rater: pd.DataFrame) -> pd.DataFrame:
    """Pooled accuracy per (mode, pool, criterion) over the raters kept in ``by_rater``."""
    if flags.empty or by_rater.empty:
        return empty_frame({**_CRITERION_KEYS, "n_judgements": "int64", "accuracy": "float64"})
    # The flags of the (rater, mode) pairs kept (one row each in ``by_rater``): a mask, not an
    # inner merge of every flag (the sizes and means do not depend on the row order).
    kept = flags.loc[_pairs_kept(flags, by_rater), ["mode", "pool", "criterion", "accurate"]]
    keys = ["mode", "pool", "criterion"]
    if all(isinstance(kept[k].dtype, pd.CategoricalDtype) for k in keys):
        return counted_shares(kept, keys, "accurate", ["n_judgements", "accuracy"])
    g = kept.groupby(keys)["accurate"].agg(["size", "mean"]).reset_index()
    g.columns = [*keys, "n_judgements", "accuracy"]
    return g


# --------------------------------------------------------------------------- consistency


def consistency_units(j: pd.DataFrame, units: npt.NDArray[np.int64] | None = None) -> pd.DataFrame:
    """Per (rater, mode, item, criterion) rated more than once: n ratings and n equal to the mode.

    The seed's example: ratings 1, 1, 1, 0 of one task give n=4, n_mode=3 (consistency 3/4).
    ``units``: ``unit_keys(j)`` when the caller has them already.
    """
    keys = ["rater_id", "mode", "item_id", "criterion"]
    # Only units rated more than once can count: the counts below run on those rows alone
    # (a few percent of the judgements), in the same order, so the table is the same. The rows
    # are found by one integer key per unit, not by hashing the four columns.
    units = units if units is not None else known_units(j)
    units = unit_keys(j) if units is None else units
    repeated = _rated_again(units, j["is_first"].to_numpy(bool) if "is_first" in j else None)
    j = j.loc[repeated, [*keys, "value"]]
    counts = j.groupby([*keys, "value"], sort=False).size().rename("c").reset_index()
    g = counts.groupby(keys, sort=False)["c"].agg(n="sum", n_mode="max").reset_index()
    return g[g["n"] >= 2].reset_index(drop=True)


def _rated_again(units: np.ndarray, first: np.ndarray | None) -> np.ndarray:
    """Rows of the units that have more than one row. A unit has at most one first rating, so
    every such unit has a row that is not a first one: only the units of those rows (a few
    percent) are looked up, and among their rows the duplicated keys are the answer (a unit
    of one repeat alone is not)."""
    if first is None:
        return np.asarray(pd.Series(units).duplicated(keep=False).to_numpy())
    out = np.zeros(len(units), dtype=bool)
    others = units[~first]
    if len(others):
        rows = np.flatnonzero(pd.Series(units).isin(others).to_numpy())
        out[rows[pd.Series(units[rows]).duplicated(keep=False).to_numpy()]] = True
    return out


_CONS_RATER_COLS = {
    "rater_id": "str",
    "rater_kind": "str",
    "pool": "str",
    "mode": "str",
    "n_ratings": "int64",
    "n_items_repeated": "int64",
    "n_repeated": "int64",
    "n_consistent": "int64",
    "consistency": "float64",
}


def consistency_by_rater(
    units: pd.DataFrame,
    j: pd.DataFrame,
    *,
    min_ratings: int = 5,
    facts: RaterFacts | None = None,
) -> pd.DataFrame:
    """Consistency per rater and mode, pooled over items and criteria (micro average).

    Criteria combine by pooling: every (item, criterion) a rater rated k times contributes k
    ratings, of which n_mode count as consistent; consistency = sum n_mode / sum n.
    """
    if units.empty:
        return empty_frame(_CONS_RATER_COLS)
    facts = facts or RaterFacts.of(j)
    g = units.groupby(["rater_id", "mode"]).agg(
        n_items_repeated=("item_id", "nunique"),
        n_repeated=("n", "sum"),
        n_consistent=("n_mode", "sum"),
    )
    g = g.reset_index().merge(facts.counts, on=["rater_id", "mode"], how="left")
    g["n_ratings"] = g["n_ratings"].fillna(0).astype(np.int64)
    g = g[g["n_ratings"] >= min_ratings]
    g["consistency"] = g["n_consistent"] / g["n_repeated"]
    g = g.merge(facts.meta, on="rater_id", how="left")
    return (
        g[list(_CONS_RATER_COLS)].sort_values(["mode", "pool", "rater_id"]).reset_index(drop=True)
    )


def consistency_by_criterion(
    units: pd.DataFrame, by_rater: pd.DataFrame, j: pd.DataFrame
) -> pd.DataFrame:
    cols = {**_CRITERION_KEYS, "n_repeated": "int64", "consistency": "float64"}
    if units.empty or by_rater.empty:
        return empty_frame(cols)
    kept = units.merge(by_rater[["rater_id", "mode", "pool"]], on=["rater_id", "mode"])
    g = kept.groupby(["mode", "pool", "criterion"])[["n", "n_mode"]].sum().reset_index()
    g["consistency"] = g["n_mode"] / g["n"]
    return g.rename(columns={"n": "n_repeated"})[list(cols)]


# --------------------------------------------------------------------------- chance-corrected


def krippendorff_alpha(units: np.ndarray, values: np.ndarray, level: str = "nominal") -> float:
    """Krippendorff's alpha from (unit, value) pairs via the coincidence matrix.

    ``level`` is "nominal", "ordinal" or "interval". Units with fewer than two values are not
    pairable and drop out, as in Krippendorff (2011), "Computing Krippendorff's alpha-reliability".
    The formula itself is ``intervals.alpha_batch`` (shared with the bootstrap intervals).
    """
    units = np.asarray(units)
    values = np.asarray(values, dtype=float)
    keep = ~np.isnan(values)
    units, values = units[keep], values[keep]
    if len(values) == 0:
        return float("nan")
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"unknown level {level!r}")
    u_codes, u_idx = np.unique(units, return_inverse=True)
    cats, c_idx = np.unique(values, return_inverse=True)
    counts = np.zeros((len(u_codes), len(cats)), dtype=np.int64)
    np.add.at(counts, (u_idx, c_idx), 1)
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) == 0:
        return float("nan")
    if len(cats) < 2:  # no variation: D_e = 0, alpha = 0/0 (as alpha_batch and Fleiss)
        return float("nan")
    uniq, freq = patterns(counts)
    return float(alpha_batch(uniq, cats, freq[None].astype(float), level)[0])


def cohen_kappa(x: np.ndarray, y: np.ndarray) -> float:
    """Cohen's kappa of two raters' nominal labels on the same units."""
    x = np.asarray(x)
    y = np.asarray(y)
    if len(x) == 0:
        return float("nan")
    cats, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
    cx, cy = codes[: len(x)], codes[len(x) :]
    po = float(np.mean(cx == cy))
    px = np.bincount(cx, minlength=len(cats)) / len(x)
    py = np.bincount(cy, minlength=len(cats)) / len(y)
    pe = float(px @ py)
    if pe >= 1.0:
        return float("nan")
    return (po - pe) / (1.0 - pe)


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa from a units x categories count matrix.

    Units may have different numbers of ratings (>= 2): P_i = (sum_j n_ij^2 - n_i) /
    (n_i (n_i - 1)) and p_j = share of all ratings in category j, which reduces to Fleiss (1971)
    when every unit has the same number of ratings. The formula itself is
    ``intervals.fleiss_batch`` (shared with the bootstrap intervals).
    """
    counts = np.asarray(counts)
    if counts.size == 0:
        return float("nan")
    uniq, freq = patterns(np.rint(counts).astype(np.int64))
    return float(fleiss_batch(uniq, freq[None].astype(float))[0])


def mean_cohen_kappa(f: pd.DataFrame, *, min_common: int = 5) -> tuple[float, int]:
    """Mean Cohen's kappa over pairs of raters with at least ``min_common`` items in common.

    ``f`` holds first-rating judgements of one (mode, criterion). Returns (mean kappa, n pairs).
    Vectorised (``unit_agreement.mean_cohen_codes``): every pair of ratings of the same item is
    one pair of positions, rater pairs and categories are integer-coded, and observed / expected
    agreement come from bincounts.
    """
    if f.empty:
        return float("nan"), 0
    return mean_cohen_codes(
        f["item_id"].to_numpy(),
        pd.factorize(f["rater_id"])[0].astype(np.int64),
        f["value"].to_numpy(dtype=float),
        min_common=min_common,
    )


_AGREE_COLS = {
    "mode": "str",
    "pool": "str",
    "criterion": "str",
    "level": "str",
    "alpha": "float64",
    "n_units": "int64",
    "n_values": "int64",
}
_KAPPA_COLS = {
    "mode": "str",
    "pool": "str",
    "criterion": "str",
    "fleiss_kappa": "float64",
    "n_units": "int64",
    "mean_cohen_kappa": "float64",
    "n_rater_pairs": "int64",
}


def agreement_tables(j: pd.DataFrame, *, min_common: int = 5) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Krippendorff's alpha (ordinal stars, nominal pairwise) and Fleiss / mean Cohen kappa
    per (mode, pool, criterion), on first ratings only (over integer codes:
    ``unit_agreement.agreement_rows``)."""
    f = j.loc[j["is_first"], ["mode", "criterion", "pool", "rater_id", "item_id", "value"]]
    a_rows, k_rows = agreement_rows(f, min_common=min_common)
    alpha_df = (
        pd.DataFrame(a_rows, columns=list(_AGREE_COLS)) if a_rows else empty_frame(_AGREE_COLS)
    )
    kappa_df = (
        pd.DataFrame(k_rows, columns=list(_KAPPA_COLS)) if k_rows else empty_frame(_KAPPA_COLS)
    )
    return alpha_df, kappa_df
