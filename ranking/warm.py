"""Reports computed ahead of the first reader, after ratings were added in bulk.

Apart from ``ranking.services`` so that what adds the ratings (an import, a finished judge run, a
simulation) decides whether a study is large with one query and without loading the report
stack (pandas, SciPy, numba: about 2.5 CPU s, a tenth of a million-rating import); only a large
study's refresh loads it (config/lazy.py).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction

from annotation.models import Study
from ranking import selectors

# Studies with fewer ratings compute their report in the request (well under a second).
STALE_MIN_RATINGS = 20_000


def stale_min_ratings() -> int:
    return int(getattr(settings, "REPORT_STALE_MIN_RATINGS", STALE_MIN_RATINGS))


def reports_warm(study_ids: Iterable[int], *, dry_run: bool = False) -> None:
    """After ratings were added in bulk (an import, a finished judge run, a simulation): once
    the transaction commits, queue the refresh of the default report of each study with at least
    ``REPORT_STALE_MIN_RATINGS`` submitted ratings, so that the report is computed before
    anybody opens it (its page says "computing" meanwhile). Smaller studies compute in the
    request, well under a second. Nothing for a dry run."""
    if dry_run:
        return
    for study_id in dict.fromkeys(study_ids):
        transaction.on_commit(functools.partial(_warm, int(study_id)))


def _warm(study_id: int) -> bool:
    study = Study.objects.filter(pk=study_id).first()
    if study is None or not selectors.study_has_ratings(study, stale_min_ratings()):
        return False
    from ranking.refresh import report_refresh_soon

    return report_refresh_soon(study_id=study_id, force=True)
