"""Human vs judge rankings: Spearman rho and Kendall tau-b with bootstrap 95 % intervals.

The rankings are the report's own: star = each model's mean stars (the mean of its criterion
means, as ``leaderboard_star``'s "overall"); pairwise = the Points score (points / games). The
bootstrap resamples *questions* with replacement (all answers and pairs of a question move
together: answers to one question share its difficulty), 1,000 times by default. Each model's
score in a resample is a weighted sum: with W the (resamples x questions) count matrix and S, N
the per-question sums and counts, score = (W @ S) / (W @ N); no rating is touched twice.

Rows compare the human ranking with the ranking of all judges together ("judge") and, when a
study has several judges, of each judge.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from . import intervals as iv
from .arrays import distinct
from .rankings import _codes, labels, match_arrays
from .schema import codes_and_names, empty_frame, str_values

RANK_AGREE_COLS = {
    "mode": "str",
    "ranking": "str",
    "judge": "str",
    "n_models": "int64",
    "n_questions": "int64",
    "spearman_rho": "float64",
    "spearman_ci_low": "float64",
    "spearman_ci_high": "float64",
    "kendall_tau_b": "float64",
    "kendall_ci_low": "float64",
    "kendall_ci_high": "float64",
}


def question_weights(n_questions: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(1 + n_boot) x questions: row 0 all ones (the data), then how often each question is drawn."""
    idx = rng.integers(0, n_questions, size=(n_boot, n_questions))
    rows = np.arange(n_boot)[:, None] * n_questions
    w = np.bincount((rows + idx).ravel(), minlength=n_boot * n_questions)
    return np.vstack([np.ones(n_questions), w.reshape(n_boot, n_questions)])


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank)."""
    from scipy.stats import rankdata

    ranks: npt.NDArray[np.float64] = rankdata(x, axis=-1)
    return ranks


def rank_corr_rows(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman rho and Kendall tau-b between each row of x and y (B x M); NaN where a row has a
    missing model or no spread."""
    bad = np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1)
    x, y = np.nan_to_num(x), np.nan_to_num(y)
    rx, ry = _ranks(x), _ranks(y)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        rho = (rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
        i, j = np.triu_indices(x.shape[1], k=1)
        sx, sy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
        tau = (sx * sy).sum(axis=1) / np.sqrt((sx**2).sum(axis=1) * (sy**2).sum(axis=1))
    return np.where(bad, np.nan, rho), np.where(bad, np.nan, tau)


def question_codes(questions: pd.Series, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(questions[rows])``'s codes (questions numbered as first seen among the
    rows: they are the bootstrap's columns) and one value per code, without copying the text
    column: the whole column's codes are numbered again among the rows."""
    codes, uniq = pd.factorize(questions.to_numpy())
    if (codes < 0).any():  # a missing question: the selection's own factorisation
        q, qs = pd.factorize(questions[rows])
        return q, np.asarray(qs)
    q, first = pd.factorize(codes[rows])
    return q, np.asarray(uniq)[first]


def _row(
    mode: str, ranking: str, judge: str, hx: np.ndarray, jx: np.ndarray, n_q: int
) -> tuple[Any, ...]:
    rho, tau = rank_corr_rows(hx, jx)
    rlo, rhi = iv.percentile_interval(rho[1:]) if len(rho) > 1 else (np.nan, np.nan)
    tlo, thi = iv.percentile_interval(tau[1:]) if len(tau) > 1 else (np.nan, np.nan)
    return (mode, ranking, judge, hx.shape[1], n_q, rho[0], rlo, rhi, tau[0], tlo, thi)


def _star_sums(
    df: pd.DataFrame, q: np.ndarray, n_q: int, models: list[str], crits: list[str]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    m, c = _codes(df["model"], models), _codes(df["criterion"], crits)
    cell = (q * len(models) + m) * len(crits) + c
    size = n_q * len(models) * len(crits)
    s = np.bincount(cell, weights=df["score"].to_numpy(float), minlength=size)
    n = np.bincount(cell, minlength=size).astype(float)
    return s.reshape(n_q, -1), n.reshape(n_q, -1)


def _star_scores(w: np.ndarray, s: np.ndarray, n: np.ndarray, n_crit: int) -> np.ndarray:
    # A model nobody rated in a resample has no mean: NaN, and the resample is left out. The
    # mean over criteria skips NaN as np.nanmean does (the same sum over the same count), but
    # says nothing: warnings.catch_warnings is not thread-safe, and the report runs in threads.
    with np.errstate(all="ignore"):
        means: np.ndarray = (w @ s) / (w @ n)
        if not n_crit:
            return means
        per = means.reshape(len(w), -1, n_crit)
        seen = ~np.isnan(per)
        out: np.ndarray = np.where(seen, per, 0.0).sum(axis=2) / seen.sum(axis=2)
        return out


def _judge_groups(df: pd.DataFrame) -> list[tuple[str, np.ndarray]]:
    judge = (df["rater_kind"] == "judge").to_numpy(bool)
    out = [("judge", judge)]
    # Rater codes order the raters as their names sort (codes_and_names).
    rater, names = codes_and_names(df["rater_id"])
    present = distinct(rater[judge])
    if len(present) > 1:
        out += [(str(names[c]), rater == c) for c in present]
    return out


def ranking_agreement(
    star_df: pd.DataFrame,
    pair_df: pd.DataFrame,
    *,
    n_boot: int = iv.N_BOOTSTRAP,
    rng: np.random.Generator | None = None,
) -> pd.DataFrame:
    """Spearman / Kendall between the human and each judge ranking, with question-bootstrap
    intervals (star means and Points)."""
    rng = rng if rng is not None else np.random.default_rng(0)
    rows: list[tuple[Any, ...]] = []
    cols = ["model", "criterion", "score", "rater_kind", "rater_id"]
    scored = star_df["score"].notna().to_numpy(bool)
    star = star_df.loc[scored, cols]  # only the columns read
    if len(star):
        q, qs = question_codes(star_df["question_id"], scored)
        models = sorted(labels(star["model"]))
        crits = sorted(labels(star["criterion"]))
        w = question_weights(len(qs), n_boot, rng)
        human = (star["rater_kind"] == "human").to_numpy(bool)
        hs, hn = _star_sums(star[human], q[human], len(qs), models, crits)
        hx = _star_scores(w, hs, hn, len(crits))
        for name, mask in _judge_groups(star):
            if mask.any() and human.any():
                js, jn = _star_sums(star[mask], q[mask], len(qs), models, crits)
                keep = ~np.isnan(hx[0]) & ~np.isnan(_star_scores(w[:1], js, jn, len(crits))[0])
                jx = _star_scores(w, js, jn, len(crits))
                rows.append(_row("star", "star_mean", name, hx[:, keep], jx[:, keep], len(qs)))
    if len(pair_df):
        rows += _pair_rows(pair_df, n_boot, rng)
    rows = [r for r in rows if r[3] >= 3]
    return (
        pd.DataFrame(rows, columns=list(RANK_AGREE_COLS)) if rows else empty_frame(RANK_AGREE_COLS)
    )


def _points_sums(
    df: pd.DataFrame, q: np.ndarray, n_q: int, models: list[str]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    # Every row is kept (the caller dropped self-matches), so ``q`` stays aligned with a, b, s.
    a, b, s, _ = match_arrays(df, models=models)
    qq = q
    m = len(models)
    size = n_q * m
    pts = np.bincount(qq * m + a, weights=s, minlength=size) + np.bincount(
        qq * m + b, weights=1.0 - s, minlength=size
    )
    games = np.bincount(qq * m + a, minlength=size) + np.bincount(qq * m + b, minlength=size)
    return pts.reshape(n_q, m), games.reshape(n_q, m).astype(float)


def _differ(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Rows where the two label columns differ: by codes when they share their categories (the
    coerced frames), else by name."""
    same_cats = (
        isinstance(a.dtype, pd.CategoricalDtype)
        and isinstance(b.dtype, pd.CategoricalDtype)
        and a.cat.categories.equals(b.cat.categories)
        and not (a.isna().any() or b.isna().any())
    )
    if same_cats:
        differ: np.ndarray = a.cat.codes.to_numpy() != b.cat.codes.to_numpy()
        return differ
    return np.asarray(str_values(a) != str_values(b), dtype=bool)


def _pair_rows(
    pair_df: pd.DataFrame, n_boot: int, rng: np.random.Generator
) -> list[tuple[Any, ...]]:
    # Self-matches (a == b) are dropped by match_arrays; keep the question codes aligned. Only
    # the columns read are copied (here and by each group's selection).
    cols = ["model_a", "model_b", "choice", "rater_kind", "rater_id"]
    differ = _differ(pair_df["model_a"], pair_df["model_b"])
    df = pair_df.loc[differ, cols]
    q, qs = question_codes(pair_df["question_id"], differ)
    models = sorted(set(labels(df["model_a"])) | set(labels(df["model_b"])))
    w = question_weights(len(qs), n_boot, rng)
    human = (df["rater_kind"] == "human").to_numpy(bool)
    if not human.any():
        return []
    hp, hg = _points_sums(df[human], q[human], len(qs), models)
    with np.errstate(all="ignore"):
        hx = (w @ hp) / (w @ hg)
    rows: list[tuple[Any, ...]] = []
    for name, mask in _judge_groups(df):
        if not mask.any():
            continue
        jp, jg = _points_sums(df[mask], q[mask], len(qs), models)
        with np.errstate(all="ignore"):
            jx = (w @ jp) / (w @ jg)
        keep = ~np.isnan(hx[0]) & ~np.isnan(jx[0])
        rows.append(_row("pairwise", "points", name, hx[:, keep], jx[:, keep], len(qs)))
    return rows
