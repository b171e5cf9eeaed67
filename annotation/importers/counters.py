"""After an import wrote ratings: the items' counters (first submitted ratings) and each study's
target number of ratings per item, kept true."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

from annotation.models import Assignment, Item, Study
from annotation.recording import NewRating


def refresh_counters(
    studies: Iterable[Study], *, fresh: Collection[int], rows: Sequence[NewRating]
) -> None:
    """Keep the items' counters true (first submitted ratings) and the target at the number of
    raters who scored the study. A study that had no items before holds only what this import
    wrote: its items were stored with their counters and its raters are those of `rows`."""
    for study in studies:
        if study.id in fresh:
            n_raters = len({r.rater_id for r in rows if r.study_id == study.id}) or 1
        else:
            _recount_items(study)
            n_raters = (
                Assignment.objects.filter(study=study).values("rater").distinct().count() or 1
            )
        if n_raters > study.ratings_per_item:
            Study.objects.filter(pk=study.pk).update(ratings_per_item=n_raters)


def _recount_items(study: Study) -> None:
    first_count = (
        Assignment.objects.filter(
            item=OuterRef("pk"), is_repeat=False, status=Assignment.Status.SUBMITTED
        )
        .order_by()
        .values("item")
        .annotate(n=Count("id"))
        .values("n")
    )
    # Only the items whose counter changes (new items were stored with theirs).
    true_count = Coalesce(Subquery(first_count), 0)
    Item.objects.filter(study=study).exclude(n_ratings=true_count).update(n_ratings=true_count)
