"""Adaptive assignment: keeping Item.priority up to date for studies in adaptive mode.

The pick (annotation/engine_pick.py) only reads the stored priorities, so serving costs what it
costs in uniform mode; the statistics run here, after every REFRESH_EVERY human submits of a
study or REFRESH_SECONDS after the previous refresh, through the task queue. What a priority
means is in annotation/engine_priority.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from django.core.cache import cache
from django.db import transaction
from django.db.models import Avg, QuerySet
from django.tasks import task

from annotation import engine_priority
from annotation.models import Item, PairChoice, Rater, Rating, Rubric, Study
from config.redis_cache import hit

REFRESH_EVERY = engine_priority.REFRESH_EVERY
REFRESH_SECONDS = engine_priority.REFRESH_SECONDS
_UPDATE_BATCH = 500
# The priority of an item that has its N ratings (below every real priority, which are >= 0).
COMPLETE = -1.0


def _llm_index(ids: set[int]) -> dict[int, int]:
    return {llm_id: k for k, llm_id in enumerate(sorted(ids))}


def _human_ratings(study: Study) -> QuerySet[Rating]:
    """First human ratings of the study's regular items (no repeats, checks or judges)."""
    return Rating.objects.filter(
        item__study=study,
        item__check_kind="",
        rater__kind=Rater.Kind.HUMAN,
    ).exclude(assignment__is_repeat=True)


def _pairwise_priorities(study: Study, items: Sequence[tuple[int, int, int | None]]) -> np.ndarray:
    index = _llm_index({a for _pk, a, _b in items} | {b for _pk, _a, b in items if b is not None})
    rows = list(
        _human_ratings(study)
        .exclude(choice="")
        .values_list("item__response_a__llm_id", "item__response_b__llm_id", "choice")
    )
    a = np.array([index[r[0]] for r in rows], dtype=np.int64)
    b = np.array([index[r[1]] for r in rows], dtype=np.int64)
    s = np.array([PairChoice(r[2]).score_a for r in rows], dtype=float)
    u = engine_priority.pair_uncertainty(a, b, s, len(index), rng=np.random.default_rng(study.pk))
    item_a = np.array([index[a_id] for _pk, a_id, _b in items], dtype=np.int64)
    item_b = np.array([index[b_id or a_id] for _pk, a_id, b_id in items], dtype=np.int64)
    return engine_priority.pairwise_item_priorities(item_a, item_b, u)


def _star_priorities(study: Study, items: Sequence[tuple[int, int, int | None]]) -> np.ndarray:
    index = _llm_index({a for _pk, a, _b in items})
    rows = list(
        _human_ratings(study)
        .annotate(mean=Avg("scores__value"))
        .filter(mean__isnull=False)
        .values_list("item__response_a__llm_id", "mean")
    )
    model = np.array([index[r[0]] for r in rows], dtype=np.int64)
    value = np.array([float(r[1]) for r in rows], dtype=float)
    u = engine_priority.star_uncertainty(model, value, len(index))
    item_model = np.array([index[a_id] for _pk, a_id, _b in items], dtype=np.int64)
    return engine_priority.star_item_priorities(item_model, u)


def study_priorities_refresh(study: Study) -> int:
    """Recompute the priority of every regular item of an adaptive study from its human ratings
    so far. Writes only the priorities that changed, in short transactions (a pick skips a row
    being written, a submit waits at most for one batch). Returns how many items changed."""
    items = list(
        Item.objects.filter(study=study, check_kind="")
        .order_by("pk")
        .values_list("pk", "response_a__llm_id", "response_b__llm_id", "priority", "n_ratings")
    )
    if not items:
        return 0
    keyed = [(pk, a, b) for pk, a, b, _p, _n in items]
    if study.mode == Rubric.Mode.PAIRWISE:
        new = _pairwise_priorities(study, keyed)
    else:
        new = _star_priorities(study, keyed)
    changed: dict[float, list[int]] = defaultdict(list)
    for (pk, _a, _b, old, n_ratings), value in zip(items, new.tolist(), strict=True):
        # Complete items go to the end of the index, so the pick does not step over them.
        target = COMPLETE if n_ratings >= study.ratings_per_item else value
        if abs(old - target) > 1e-9:
            changed[target].append(pk)
    for value, pks in changed.items():
        for start in range(0, len(pks), _UPDATE_BATCH):
            with transaction.atomic():
                Item.objects.filter(pk__in=pks[start : start + _UPDATE_BATCH]).update(
                    priority=value
                )
    return sum(len(p) for p in changed.values())


@task
def study_priorities_refresh_job(study_id: int) -> None:
    study = Study.objects.filter(pk=study_id).first()
    if study is not None and study.assignment_mode == Study.AssignmentMode.ADAPTIVE:
        study_priorities_refresh(study)


def note_submit(study: Study) -> None:
    """Count a first submit in an adaptive study; every REFRESH_EVERY of them, or the first one
    REFRESH_SECONDS after the last refresh, queues a refresh once the transaction commits. No
    database work here: the counter lives in the cache."""
    if study.assignment_mode != Study.AssignmentMode.ADAPTIVE:
        return
    due_key = f"annot-adaptive-due:{study.pk}"
    count_key = f"annot-adaptive-count:{study.pk}"
    count = hit(count_key, None)
    fresh = cache.add(due_key, 1, timeout=REFRESH_SECONDS)
    if fresh or count >= REFRESH_EVERY:
        cache.set(count_key, 0, timeout=None)
        cache.set(due_key, 1, timeout=REFRESH_SECONDS)
        study_id = study.pk
        transaction.on_commit(lambda: study_priorities_refresh_job.enqueue(study_id))
