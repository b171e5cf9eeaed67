"""Hidden exposures: repeats of what a rater already answered, and quality checks (gold items and
attention checks). Both are served only where a new item would have been, never two hidden
exposures in a row, reserve nothing and never count toward N. A rater cannot tell them from a
regular item: same page, same kind of URL, sides and hints drawn as for any item.

- Repeats: about study.repeat_rate of exposures, at least REPEAT_GAP exposures after the original
  and only once the original is past the rater's RECENT_EDITS latest submissions (closed to
  them); pairwise repeats swap the sides.
- Checks: about study.check_rate of exposures, an item with check_kind set that this rater has not
  seen, chosen at random; any number of raters may see each check once.
"""

from __future__ import annotations

import random
from typing import TypedDict

from django.db.models import Exists, OuterRef

from annotation import engine_sql
from annotation.engine_base import (
    RECENT_EDITS,
    REPEAT_GAP,
    Slot,
    exposure_insert,
    exposure_new,
    hint_for,
)
from annotation.engine_pick import reserve_or_reclaim
from annotation.models import Assignment, Item, Rater, Rubric, Study

# How many candidates a draw looks at; enough for randomness, bounded for speed.
_CANDIDATES = 200


class Origin(TypedDict):
    pk: int
    item_id: int
    left_is_a: bool
    hint_shown: bool


def _closed_before(*, study: Study, rater: Rater) -> int | None:
    """The seq below which the rater's submissions can no longer be opened or changed (they
    have RECENT_EDITS later submissions); None while they have fewer than RECENT_EDITS."""
    latest = (
        Assignment.objects.filter(study=study, rater=rater, status=Assignment.Status.SUBMITTED)
        .order_by("-seq")
        .values_list("seq", flat=True)[RECENT_EDITS - 1 : RECENT_EDITS]
    )
    return next(iter(latest), None)


def repeat_origin(*, study: Study, rater: Rater, seq: int, rng: random.Random) -> Origin | None:
    """A submitted first exposure of a regular item at least REPEAT_GAP back, never repeated,
    and already closed to its rater (engine_submit.can_change): its page and Previous then read
    the same before and after the repeat, so they cannot give the repeat away."""
    closed_before = _closed_before(study=study, rater=rater)
    if closed_before is None:
        return None
    already = Assignment.objects.filter(repeat_of=OuterRef("pk"))
    candidates = list(
        Assignment.objects.filter(
            study=study,
            rater=rater,
            status=Assignment.Status.SUBMITTED,
            is_repeat=False,
            seq__lte=seq - REPEAT_GAP - 1,
            seq__lt=closed_before,
        )
        .filter(~Exists(already))
        .order_by("-seq")
        .values_list("pk", "item_id", "left_is_a", "hint_shown", "item__check_kind")[:_CANDIDATES]
    )
    regular = [
        Origin(pk=pk, item_id=item_id, left_is_a=left_is_a, hint_shown=hint_shown)
        for pk, item_id, left_is_a, hint_shown, check_kind in candidates
        if not check_kind
    ]
    return rng.choice(regular) if regular else None


def check_pick(*, study: Study, rater: Rater, rng: random.Random) -> int | None:
    """A quality-check item of the study that this rater was never served, at random."""
    seen = Assignment.objects.filter(item=OuterRef("pk"), rater=rater, is_repeat=False)
    candidates = list(
        Item.objects.filter(study=study)
        .exclude(check_kind="")
        .filter(~Exists(seen))
        .order_by("shuffle")
        .values_list("pk", flat=True)[:_CANDIDATES]
    )
    return rng.choice(candidates) if candidates else None


def _something_new_left(slot: Slot, rng: random.Random) -> bool:
    """Whether the study still has a new item for this rater (probed by reserving one and
    giving it back, inside the caller's transaction)."""
    probe = reserve_or_reclaim(study=slot.study, rater=slot.rater, now=slot.served_at, rng=rng)
    if probe is None:
        return False
    engine_sql.sql("UPDATE annotation_item SET n_reserved = n_reserved - 1 WHERE id = %s", [probe])
    return True


def repeat_create(slot: Slot, origin: Origin, rng: random.Random) -> Assignment | None:
    """A hidden repeat, served only where a new item would have been: when the study has nothing
    new left for this rater, the answer is None, as it is without the draw. Otherwise repeats
    would pile up among the few exposures of annotators who keep asking at the end of a study
    (where the excess over the study's rate came from; see docs/annotators.md)."""
    if not _something_new_left(slot, rng):
        return None
    exposure = exposure_new(
        slot,
        item_id=origin["item_id"],
        # Pairwise repeats show the sides swapped; star items have one side.
        left_is_a=not origin["left_is_a"] if slot.study.mode == Rubric.Mode.PAIRWISE else True,
        hint_shown=origin["hint_shown"],
        is_repeat=True,
        repeat_of_id=origin["pk"],
    )
    return exposure_insert(exposure)


def check_create(slot: Slot, item_id: int, rng: random.Random) -> Assignment | None:
    """A hidden quality check, on the same terms as a repeat; sides and hint drawn as for any
    item (check_answer is stored canonically, so the sides do not matter to it)."""
    if not _something_new_left(slot, rng):
        return None
    exposure = exposure_new(
        slot,
        item_id=item_id,
        left_is_a=rng.random() < 0.5 if slot.study.mode == Rubric.Mode.PAIRWISE else True,
        hint_shown=hint_for(slot.study, rng),
    )
    return exposure_insert(exposure)


def hidden_exposure(
    slot: Slot, *, last_hidden: bool, rng: random.Random
) -> tuple[bool, Assignment | None]:
    """(True, exposure or None) when this exposure is drawn hidden and something hidden was
    found for it; (False, None) when a regular item should be served. One draw decides: below
    repeat_rate a repeat, below repeat_rate + check_rate a check. No draw at all after a hidden
    exposure or when the study has neither, so studies without checks draw as they always did."""
    study = slot.study
    if last_hidden or (study.repeat_rate <= 0 and study.check_rate <= 0):
        return False, None
    u = rng.random()
    if u < study.repeat_rate:
        origin = repeat_origin(study=study, rater=slot.rater, seq=slot.seq, rng=rng)
        if origin is not None:
            return True, repeat_create(slot, origin, rng)
    elif u < study.repeat_rate + study.check_rate:
        check = check_pick(study=study, rater=slot.rater, rng=rng)
        if check is not None:
            return True, check_create(slot, check, rng)
    return False, None
