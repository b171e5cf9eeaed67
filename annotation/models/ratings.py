"""What was said: ratings with their per-criterion scores, and the record of each import."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from annotation.models.catalogue import Criterion, Dataset
from annotation.models.study import Assignment, Item, PairChoice, Rater


class ParseStatus(models.TextChoices):
    PARSED = "", _("parsed or human")
    UNPARSED = "unparsed", _("unparsed judge output")


class Rating(models.Model):
    """The answer to an assignment: per-criterion scores (Score rows) for star items, or the
    pairwise choice in canonical A/B orientation."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="rating")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="ratings")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="ratings")
    choice = models.CharField(max_length=10, choices=PairChoice.choices, blank=True)
    comment = models.TextField(blank=True)
    # A judge verdict that could not be read (imported as given): the raw text is kept, the
    # rating carries no score or choice and the statistics leave it out.
    # Database defaults: the engine's hot path inserts ratings in plain SQL without these columns.
    parse_status = models.CharField(
        max_length=10, choices=ParseStatus.choices, blank=True, default="", db_default=""
    )
    raw_output = models.TextField(blank=True, default="", db_default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(choice__in=["", "A", "B", "tie", "both_bad"]),
                name="rating_choice_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["item", "rater"], name="rating_item_rater"),
            models.Index(
                fields=["item"], condition=Q(parse_status="unparsed"), name="rating_unparsed"
            ),
        ]

    def __str__(self) -> str:
        return f"rating {self.pk}"

    def scores_dict(self) -> dict[str, int]:
        return {s.criterion.key: s.value for s in self.scores.all()}


class Score(models.Model):
    rating = models.ForeignKey(Rating, on_delete=models.CASCADE, related_name="scores")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="+")
    value = models.PositiveSmallIntegerField()
    # A published value outside the criterion's range, kept as given (data as given).
    out_of_range = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["rating", "criterion"]
        constraints = [
            models.UniqueConstraint(fields=["rating", "criterion"], name="score_one_per_criterion"),
        ]
        indexes = [
            models.Index(
                fields=["rating"], condition=Q(out_of_range=True), name="score_out_of_range"
            )
        ]

    def __str__(self) -> str:
        return f"{self.criterion.key}={self.value}"


class ImportRecord(models.Model):
    """One run of an importer: what was read, what was added, what was repaired."""

    format = models.CharField(max_length=40)
    paths = models.JSONField(default=list)
    dataset = models.ForeignKey(Dataset, null=True, blank=True, on_delete=models.SET_NULL)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    ok = models.BooleanField(default=True)
    counts = models.JSONField(default=dict, blank=True)
    repairs = models.JSONField(default=list, blank=True)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.format} import {self.created_at:%Y-%m-%d %H:%M}"


class Exclusion(models.Model):
    """An annotator left out of a study's report by its organizer, with the reason. The raw
    ratings stay; the report lists every exclusion."""

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="exclusions"
    )
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="exclusions")
    reason = models.CharField(max_length=500)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["study", "rater"]
        constraints = [
            models.UniqueConstraint(fields=["study", "rater"], name="exclusion_unique_per_study")
        ]

    def __str__(self) -> str:
        return f"{self.rater} excluded from {self.study}: {self.reason}"
