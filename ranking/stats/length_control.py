"""Length preference and a length-controlled win rate (AlpacaEval 2 style), per rater group.

* ``p_longer``: among pairwise ratings whose answers differ in length and whose choice is
  decisive (A or B), the share where the longer answer won. 0.5 = no length preference.
* Length-controlled win rate: a logistic GLM of the outcome of each rating,

      P(A beats B) = sigmoid(theta_A - theta_B + gamma * tanh(d / sd(d))),  d = len_A - len_B,

  fitted by Newton's method (IRLS) with a tiny ridge (1e-4) on theta so that the fit exists when a
  model wins every game; ties count as half a win (y = 0.5; quasi-likelihood). AlpacaEval 2
  uses the same length term against one baseline model; here every model is compared with every
  other, so the controlled win rate of model m is the mean over the other models o of
  sigmoid(theta_m - theta_o): the share of games m would win against a random opponent if the
  answers were of equal length. ``raw_win_rate`` is the Points score (points / games) beside it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .arrays import distinct
from .elo import HAVE_NUMBA, numba
from .rankings import labels, match_codes
from .schema import codes_and_names, empty_frame

LC_COLS = {
    "group": "str",
    "model": "str",
    "games": "int64",
    "raw_win_rate": "float64",
    "lc_win_rate": "float64",
    "length_coef": "float64",
}
PREF_COLS = {
    "group_by": "str",
    "group": "str",
    "n_decisive": "int64",
    "n_longer_won": "int64",
    "p_longer": "float64",
}


def _system_py(
    beta: np.ndarray, a: np.ndarray, b: np.ndarray, ab: np.ndarray, y: np.ndarray, z: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One Newton step's gradient and Hessian (before the ridge) in numpy: bincounts over the
    games, never a dense n x models design."""
    m = len(beta) - 1
    eta = beta[a] - beta[b] + beta[m] * z
    p = 1.0 / (1.0 + np.exp(-eta))
    w = np.maximum(p * (1.0 - p), 1e-12)
    r = y - p
    grad = np.zeros(m + 1)
    grad[:m] = np.bincount(a, r, m) - np.bincount(b, r, m)
    grad[m] = (r * z).sum()
    h = np.zeros((m + 1, m + 1))
    h[:m, :m] = -np.bincount(ab, w, m * m).reshape(m, m)
    h[:m, :m] += h[:m, :m].T
    h[np.arange(m), np.arange(m)] = np.bincount(a, w, m) + np.bincount(b, w, m)
    wz = w * z
    h[:m, m] = h[m, :m] = np.bincount(a, wz, m) - np.bincount(b, wz, m)
    h[m, m] = (wz * z).sum()
    return grad, h


def _minus_eta_py(beta: np.ndarray, a: np.ndarray, b: np.ndarray, z: np.ndarray) -> np.ndarray:
    """-(beta[a] - beta[b] + gamma z), the argument of ``np.exp`` in ``_system_py``."""
    m = len(beta) - 1
    out = np.empty(len(a))
    for i in range(len(a)):
        out[i] = -(beta[a[i]] - beta[b[i]] + beta[m] * z[i])
    return out


def _sums_py(
    e: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    ab: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
    m: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``_system_py``'s bincounts in one pass from ``e`` = exp(-eta), each summed in game
    order as ``np.bincount`` does: rows r, w, w z by a and by b (``sums[0..5]``), w by (a, b)
    cell, and the products r z and w z z (numpy's pairwise sum adds those up)."""
    sums = np.zeros((6, m))
    cell = np.zeros(m * m)
    rz = np.empty(len(a))
    wzz = np.empty(len(a))
    for i in range(len(a)):
        p = 1.0 / (1.0 + e[i])
        w = max(p * (1.0 - p), 1e-12)
        r = y[i] - p
        wz = w * z[i]
        sums[0, a[i]] += r
        sums[1, b[i]] += r
        sums[2, a[i]] += w
        sums[3, b[i]] += w
        sums[4, a[i]] += wz
        sums[5, b[i]] += wz
        cell[ab[i]] += w
        rz[i] = r * z[i]
        wzz[i] = wz * z[i]
    return sums, cell, rz, wzz


if HAVE_NUMBA:
    _minus_eta = numba.njit(cache=True, nogil=True)(_minus_eta_py)
    _sums = numba.njit(cache=True, nogil=True)(_sums_py)


def _system(
    beta: np.ndarray, a: np.ndarray, b: np.ndarray, ab: np.ndarray, y: np.ndarray, z: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``_system_py``, the same figures bit for bit: the exponentials from ``np.exp`` (numpy's
    own, not the C library's that numba calls), every sum in the same order."""
    if not HAVE_NUMBA:  # pragma: no cover
        return _system_py(beta, a, b, ab, y, z)
    m = len(beta) - 1
    e = _minus_eta(beta, a, b, z)
    np.exp(e, out=e)
    sums, cell, rz, wzz = _sums(e, a, b, ab, y, z, m)
    grad = np.zeros(m + 1)
    grad[:m] = sums[0] - sums[1]
    grad[m] = rz.sum()
    h = np.zeros((m + 1, m + 1))
    h[:m, :m] = -cell.reshape(m, m)
    h[:m, :m] += h[:m, :m].T
    h[np.arange(m), np.arange(m)] = sums[2] + sums[3]
    h[:m, m] = h[m, :m] = sums[4] - sums[5]
    h[m, m] = wzz.sum()
    return grad, h


def fit_length_glm(
    a: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
    n_models: int,
    *,
    ridge: float = 1e-4,
    max_iter: int = 50,
) -> tuple[np.ndarray, float]:
    """(theta per model, gamma) of the GLM above (``_system``: the design's sums in one
    compiled pass over the games, never a dense n x models matrix)."""
    m = n_models
    beta = np.zeros(m + 1)
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    y, z = np.asarray(y, float), np.asarray(z, float)
    ab = a * m + b  # the (a, b) cell of each game, the same every iteration
    for _ in range(max_iter):
        grad, h = _system(beta, a, b, ab, y, z)
        grad[:m] -= ridge * beta[:m]
        h[:m, :m] += ridge * np.eye(m)
        step = np.linalg.lstsq(h, grad, rcond=None)[0]
        beta += step
        if np.max(np.abs(step)) < 1e-9:
            break
    theta = beta[:m] - beta[:m].mean()
    return theta, float(beta[m])


def lc_win_rates(theta: np.ndarray, played: np.ndarray) -> np.ndarray:
    """Mean of sigmoid(theta_m - theta_o) over the other models o that played."""
    t = theta[played]
    p = 1.0 / (1.0 + np.exp(-(t[:, None] - t[None, :])))
    np.fill_diagonal(p, np.nan)
    out = np.full(len(theta), np.nan)
    out[played] = np.nanmean(p, axis=1) if len(t) > 1 else np.nan
    return out


def _groups(pair_df: pd.DataFrame) -> list[tuple[str, str, np.ndarray]]:
    """(group_by, group, row mask): all humans, each human pool, each judge (in name order;
    integer codes, not a string comparison per row)."""
    human = (pair_df["rater_kind"] == "human").to_numpy(bool)
    judge = (pair_df["rater_kind"] == "judge").to_numpy(bool)
    pool, pools = codes_and_names(pair_df["pool"])
    rater, raters = codes_and_names(pair_df["rater_id"])
    out = [("humans", "all", human)]
    out += [("pool", str(pools[c]), (pool == c) & human) for c in distinct(pool[human])]
    out += [("judge", str(raters[c]), rater == c) for c in distinct(rater[judge])]
    return out


def _group_matches(
    a: np.ndarray, b: np.ndarray, s: np.ndarray, names: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], np.ndarray]:
    """``match_arrays`` of a group's rows from the whole frame's codes in ``names`` (-1 when
    missing): the group's models (the names its rows use, sorted), its matches renumbered in
    them, and the rows kept (both models known and different)."""
    n = len(names)
    present = (np.bincount(a[a >= 0], minlength=n) + np.bincount(b[b >= 0], minlength=n)) > 0
    number = np.append(np.cumsum(present) - 1, -1)  # the last entry: -1 stays missing
    a, b = number[a], number[b]
    ok = (a >= 0) & (b >= 0) & (a != b)
    models = [name for name, used in zip(names, present, strict=True) if used]
    return a[ok], b[ok], s[ok], models, ok


def length_controlled(pair_df: pd.DataFrame) -> pd.DataFrame:
    """Raw and length-controlled win rate per model, for all humans and for each judge."""
    if pair_df.empty:
        return empty_frame(LC_COLS)
    d_all = (pair_df["len_a"] - pair_df["len_b"]).to_numpy(float)
    sd = float(np.std(d_all)) or 1.0
    # Model codes and A's score read once; each group renumbers its models (``match_arrays``'
    # sorted names of the group's rows) and keeps its matches in row order.
    names = sorted(set(labels(pair_df["model_a"])).union(labels(pair_df["model_b"])))
    a_all, b_all, s_all = match_codes(pair_df, names)
    parts = []
    for group_by, grp, mask in _groups(pair_df):
        if group_by == "pool" or not mask.any():
            continue
        a, b, s, models, ok = _group_matches(a_all[mask], b_all[mask], s_all[mask], names)
        z = np.tanh(d_all[mask][ok] / sd)
        m = len(models)
        if len(a) == 0 or m < 2:
            continue
        theta, gamma = fit_length_glm(a, b, s, z, m)
        games = np.bincount(a, minlength=m) + np.bincount(b, minlength=m)
        pts = np.bincount(a, s, m) + np.bincount(b, 1.0 - s, m)
        played = games > 0
        with np.errstate(all="ignore"):
            raw = pts / games
        t = pd.DataFrame(
            {
                "group": grp if group_by == "judge" else "humans",
                "model": models,
                "games": games,
                "raw_win_rate": raw,
                "lc_win_rate": lc_win_rates(theta, played),
                "length_coef": gamma,
            }
        )
        parts.append(t[played])
    return pd.concat(parts, ignore_index=True) if parts else empty_frame(LC_COLS)


def length_preference(pair_df: pd.DataFrame) -> pd.DataFrame:
    """P(the longer answer wins) among decisive ratings of answers of different length."""
    if pair_df.empty:
        return empty_frame(PREF_COLS)
    d = (pair_df["len_a"] - pair_df["len_b"]).to_numpy()
    # One comparison per label (category codes for the coerced choice column).
    a, b = (pair_df["choice"] == "A").to_numpy(bool), (pair_df["choice"] == "B").to_numpy(bool)
    decisive = (d != 0) & (a | b)
    longer_won = decisive & ((a & (d > 0)) | (b & (d < 0)))
    rows = []
    for group_by, grp, mask in _groups(pair_df):
        n = int((mask & decisive).sum())
        k = int((mask & longer_won).sum())
        rows.append((group_by, grp, n, k, k / n if n else np.nan))
    return pd.DataFrame(rows, columns=list(PREF_COLS))
