"""The ratings of a bundle as the rows `ratings_record_bulk` stores (writer.py plans their items
first): each rating's `NewRating`, in file order, first ratings before repeats; a repeat linked
to its first exposure (of this import or stored); a rating already stored skipped and counted.
The checks and messages are the writer's: a score's criterion and range, a choice, a rating
given twice, a repeat without a first rating.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from annotation.importers.bundle import ImportRefused, RatingSpec, canonical_choice
from annotation.importers.bundle import message as _
from annotation.models import Assignment, Study
from annotation.recording import NewRating

if TYPE_CHECKING:
    from annotation.importers.writer import _Ctx


def _scores(ctx: _Ctx, spec: RatingSpec, study: Study) -> tuple[dict[int, int], frozenset[int]]:
    scores, flagged = {}, set()
    for ckey, value in spec.scores.items():
        crit = ctx.criteria.get((study.rubric_id, ckey))
        if crit is None:
            raise ImportRefused(
                _(
                    "%(where)s: rubric %(rubric)s has no criterion %(criterion)s",
                    where=spec.where,
                    rubric=repr(study.rubric.key),
                    criterion=repr(ckey),
                )
            )
        if not crit.min_score <= value <= crit.max_score:
            if ckey not in spec.out_of_range:
                raise ImportRefused(
                    _(
                        "%(where)s: score %(criterion)s=%(value)s is outside the rubric's range "
                        "%(lo)s-%(hi)s",
                        where=spec.where,
                        criterion=ckey,
                        value=value,
                        lo=crit.min_score,
                        hi=crit.max_score,
                    )
                )
            flagged.add(crit.id)
        scores[crit.id] = value
    return scores, frozenset(flagged)


def new_rating(
    ctx: _Ctx, spec: RatingSpec, study: Study, item_id: int, first_is_a: bool, rater_id: int
) -> NewRating:
    scores, flagged = _scores(ctx, spec, study) if spec.scores else ({}, frozenset())
    pairwise = study.mode == "pairwise"  # Rubric.Mode.PAIRWISE, compared as the plain str
    return NewRating(
        study_id=study.id,
        item_id=item_id,
        rater_id=rater_id,
        choice=canonical_choice(spec.choice, first_is_a, spec.where) if pairwise else "",
        scores=scores,
        out_of_range=flagged,
        left_is_a=(first_is_a == spec.first_on_left) if pairwise else True,
        hint_shown=spec.hint_shown,
        is_repeat=spec.repeat,
        served_at=spec.served_at,
        submitted_at=spec.submitted_at,
        active_ms=spec.active_ms,
        comment=spec.comment,
        parse_status=spec.parse_status,
        raw_output=spec.raw_output,
    )


def planned(ctx: _Ctx, plan, keys: dict, rows: list[NewRating]) -> Iterator[NewRating]:
    """The ratings not stored yet, each added to `rows` and yielded as it is planned (one chunk
    is copied while the next is planned). A rater's first rating of an item is its first
    exposure; a second one (a repeat) is stored as a repeat of that first exposure, from this
    import or from the database."""
    studies = ctx.studies.values()
    stored = Assignment.objects.filter(study__in=studies)
    firsts: dict[tuple[int, int], int | NewRating] = {
        (i, r): aid
        for aid, i, r in stored.filter(is_repeat=False).values_list("id", "item_id", "rater_id")
    }
    repeated = set(stored.filter(is_repeat=True).values_list("item_id", "rater_id"))
    rater_ids = {name: rater.id for name, rater in ctx.raters.items()}
    # (item, rater) of the first ratings skipped as stored, and of the repeats met so far: a
    # second one is the same rating twice. (A first rating planned here is in `firsts`.)
    skipped: set[tuple[int, int]] = set()
    repeats: set[tuple[int, int]] = set()
    for spec, (study, key, first_is_a) in plan:  # first ratings before repeats (_items)
        pair = item_id, rater_id = keys[key], rater_ids[spec.rater]
        if spec.repeat:
            _twice(spec, pair in repeats)
            repeats.add(pair)
            if pair in repeated:
                _skip(ctx, spec)
                continue
        elif (origin := firsts.get(pair)) is not None:
            _twice(spec, isinstance(origin, NewRating) or pair in skipped)
            skipped.add(pair)
            _skip(ctx, spec)
            continue
        row = new_rating(ctx, spec, study, item_id, first_is_a, rater_id)
        if spec.repeat:
            _link_repeat(row, spec, firsts.get(pair))
        else:
            firsts[pair] = row
        rows.append(row)
        yield row


def _twice(spec: RatingSpec, twice: bool) -> None:
    if twice:
        raise ImportRefused(
            _(
                "%(where)s: rater %(rater)s rates this item twice in the same import",
                where=spec.where,
                rater=repr(spec.rater),
            )
        )


def _skip(ctx: _Ctx, spec: RatingSpec) -> None:
    """A rating already stored: counted as skipped."""
    ctx.count("assignments", skipped=1)
    ctx.count("ratings", skipped=1)
    ctx.count("scores", skipped=len(spec.scores))


def _link_repeat(row: NewRating, spec: RatingSpec, origin: int | NewRating | None) -> None:
    """A repeat names its first exposure: an assignment id, or a rating of this import."""
    if origin is None:
        raise ImportRefused(
            _("%(where)s: a repeated rating has no first rating to repeat", where=spec.where)
        )
    row.repeat_of_id, row.repeat_of = (origin, None) if isinstance(origin, int) else (None, origin)
