"""The report's worker threads change when sections run, never their figures: every section
draws from its own seeded stream (ranking.stats.report, docs/decisions/report-speed.md)."""

from __future__ import annotations

import json

import pytest

from ranking.stats import build_report, report_to_jsonable, synthetic
from ranking.stats import report as report_mod


def _figures(report: dict) -> str:
    out = report_to_jsonable(report)
    for key in ("seconds", "timings", "cpu_timings"):
        out["meta"].pop(key, None)
    return json.dumps(out, sort_keys=True, default=str)


@pytest.fixture(scope="module")
def study():
    return synthetic.generate(n_models=5, n_questions=25, n_onsite=4, n_crowd=6, seed=3)


# Without thresholds the worker sections start before the quality tables; with them, after the
# exclusion: both orders must give the figures of the one-thread run.
@pytest.mark.parametrize("thresholds", [{}, {"min_accuracy": 0.8, "min_consistency": 0.75}])
def test_threaded_report_equals_the_one_thread_report(study, monkeypatch, thresholds):
    options = {"n_shuffles": 10, "n_bootstrap": 40, "seed": 2, **thresholds}
    report = build_report(study.star_df, study.pair_df, **options)
    assert bool(report["meta"]["excluded_raters"]) == bool(thresholds)  # both paths are taken
    assert "judge_tables (worker thread)" in report["meta"]["timings"]  # the worker path ran
    threaded = _figures(report)
    monkeypatch.setattr(report_mod, "REPORT_THREADS", 0)
    sequential = _figures(build_report(study.star_df, study.pair_df, **options))
    assert threaded == sequential


def test_kernel_blocks_give_the_same_figures_on_any_number_of_threads(study, monkeypatch):
    """The kappa bootstrap's blocks of pairs (one seed each) and the Elo chains (one seed each)
    give the same figures whether the blocks run on two threads, one, or in the caller."""
    from ranking.stats import kappa_kernel, parallel

    monkeypatch.setattr(kappa_kernel, "PAIRS_PER_BLOCK", 3)  # several blocks per table
    calls: list[int] = []
    real_map = parallel.kernel_map

    def counting_map(fn, jobs):
        jobs = list(jobs)
        calls.append(len(jobs))
        return real_map(fn, jobs)

    monkeypatch.setattr(parallel, "kernel_map", counting_map)
    options = {"n_shuffles": 10, "n_bootstrap": 40, "seed": 5}
    two = _figures(build_report(study.star_df, study.pair_df, **options))
    assert max(calls) > 2  # the pairs were cut into blocks
    monkeypatch.setattr(parallel, "KERNEL_THREADS", 1)
    one = _figures(build_report(study.star_df, study.pair_df, **options))
    monkeypatch.setattr(report_mod, "REPORT_THREADS", 0)
    inline = _figures(build_report(study.star_df, study.pair_df, **options))
    assert two == one == inline
