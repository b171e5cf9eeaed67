"""What is rated: datasets, questions, the LLMs that answered, their responses, and the rubrics
(criteria and scales) they are rated on."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone, translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.models._ids import _public_id  # noqa: F401


def unique_per_owner(field: str, prefix: str) -> list[models.BaseConstraint]:
    """`field` is unique among one owner's rows, and among the ownerless rows (the shared
    catalogue, the command line's) by themselves: two organizers may use the same name, so a
    refused name tells nobody what another organizer called their data."""
    return [
        models.UniqueConstraint(
            fields=["owner", field], condition=Q(owner__isnull=False), name=f"{prefix}_owner"
        ),
        models.UniqueConstraint(
            fields=[field], condition=Q(owner__isnull=True), name=f"{prefix}_shared"
        ),
    ]


# The names of the rows whose verbose_name is Django's default (English), as refusals say them.
ROW_NOUNS = {"Dataset": _("dataset"), "Rubric": _("rubric"), "Study": _("study")}


def check_name_free(row: models.Model, field: str, *, with_shared: bool) -> None:
    """A ValidationError when `row`'s owner already has another row with its `field` (the
    command line's rows: another ownerless row). `with_shared`: an owned row may not take the
    name of a shared row either, for kinds every organizer sees (datasets, built-in templates).
    Other organizers' rows are never looked at, so the answer tells nothing about them."""
    from django.core.exceptions import ValidationError

    value = getattr(row, field)
    if isinstance(value, str) and "\x00" in value:  # PostgreSQL text cannot hold NUL
        raise ValidationError({field: gettext("Null characters are not allowed.")})
    owner_id = getattr(row, "owner_id", None)
    mine = Q(owner__isnull=True) if owner_id is None else Q(owner_id=owner_id)
    if owner_id is not None and with_shared:
        mine |= Q(owner__isnull=True)
    same = type(row)._default_manager.filter(mine, **{field: value})
    if row.pk is not None:
        same = same.exclude(pk=row.pk)
    if value and same.exists():
        what = ROW_NOUNS.get(type(row).__name__, type(row)._meta.verbose_name)
        said = gettext("A %(what)s named %(name)s already exists.")
        raise ValidationError({field: said % {"what": what, "name": repr(value)}})


class Dataset(models.Model):
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=200, blank=True, help_text="Where the data came from.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = unique_per_owner("name", "dataset_unique_name")

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        check_name_free(self, "name", with_shared=True)


class Question(models.Model):
    class Kind(models.TextChoices):
        OBJECTIVE = "objective", _("objective")
        SUBJECTIVE = "subjective", _("subjective")
        UNSPECIFIED = "", _("unspecified")

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="questions")
    external_id = models.CharField(max_length=200, help_text="The id in the source file.")
    text = models.TextField()
    task_type = models.CharField(
        max_length=100, blank=True, db_index=True, help_text="Subject or category."
    )
    subcategory = models.CharField(max_length=100, blank=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, blank=True, default="")
    answer_type = models.CharField(
        max_length=50, blank=True, help_text="AlignBench answer type, selects judging dimensions."
    )
    reference = models.TextField(blank=True, help_text="Hint or reference answer.")
    meta = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["dataset", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "external_id"], name="question_unique_external_id"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_id}"


class LLM(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM"
        verbose_name_plural = "LLMs"

    def __str__(self) -> str:
        return self.name


class Response(models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="responses")
    llm = models.ForeignKey(LLM, on_delete=models.PROTECT, related_name="responses")
    external_id = models.CharField(max_length=200, blank=True)
    text = models.TextField()
    length = models.PositiveIntegerField(help_text="Length of the answer in characters.")

    class Meta:
        ordering = ["question", "llm"]
        constraints = [
            models.UniqueConstraint(fields=["question", "llm"], name="response_one_per_llm"),
        ]
        # The report's data-quality count finds empty answers without a scan.
        indexes = [models.Index(fields=["id"], condition=Q(length=0), name="response_empty")]

    def __str__(self) -> str:
        return f"{self.llm} / {self.question}"

    def save(self, *args, **kwargs):
        self.length = len(self.text)
        super().save(*args, **kwargs)


class Rubric(models.Model):
    class Mode(models.TextChoices):
        STAR = "star", _("star scoring")
        PAIRWISE = "pairwise", _("pairwise comparison")

    # Unique per owner (and among the ownerless rows): a key another organizer took is never
    # refused, so a refusal tells nothing about their rubrics (docs/decisions/data.md).
    key = models.SlugField(max_length=80)
    name_en = models.CharField(max_length=200)
    name_zh = models.CharField(max_length=200, blank=True)
    mode = models.CharField(max_length=10, choices=Mode.choices)
    description = models.TextField(blank=True)
    builtin = models.BooleanField(default=False, help_text="Shipped rubrics are read-only.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The organizer who made it; blank for the built-in ones (shared) and for "
        "custom ones of unknown origin (superusers only).",
    )

    class Meta:
        ordering = ["key"]
        constraints = unique_per_owner("key", "rubric_unique_key")

    def __str__(self) -> str:
        return self.name_en

    def clean(self) -> None:
        """The key is free among the owner's rubrics and the built-in ones (which every
        organizer sees); other organizers' rubrics are never looked at."""
        from django.core.exceptions import ValidationError

        check_name_free(self, "key", with_shared=False)
        if self.owner_id is None or not self.key:
            return
        if Rubric.objects.filter(builtin=True, key=self.key).exclude(pk=self.pk).exists():
            said = gettext("A rubric named %(name)s already exists.") % {"name": repr(self.key)}
            raise ValidationError({"key": said})

    @property
    def display_name(self) -> str:
        """The name in the active language: the Chinese one on Chinese pages, when it has one."""
        zh = (translation.get_language() or "").startswith("zh")
        return (self.name_zh if zh else "") or self.name_en

    def criteria_for(self, question: Question) -> list[Criterion]:
        """The criteria that apply to this question (by its kind or AlignBench answer type)."""
        return [c for c in self.criteria.all() if c.applies(question)]


class Criterion(models.Model):
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="criteria")
    key = models.SlugField(max_length=80)
    label_en = models.CharField(max_length=200)
    label_zh = models.CharField(max_length=200, blank=True)
    min_score = models.PositiveSmallIntegerField(default=1)
    max_score = models.PositiveSmallIntegerField(default=3)
    # One entry per star, from min_score up: {"en": "...", "zh": "..."}.
    descriptions = models.JSONField(default=list, blank=True)
    applies_to = models.CharField(
        max_length=200,
        blank=True,
        help_text="Blank: every question; else a comma-separated list of question kinds or "
        "answer types it applies to.",
    )
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["rubric", "order", "id"]
        verbose_name_plural = "criteria"
        constraints = [
            models.UniqueConstraint(fields=["rubric", "key"], name="criterion_unique_key"),
            models.CheckConstraint(
                condition=Q(max_score__gte=F("min_score")), name="criterion_range_ordered"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rubric.key}:{self.key}"

    def applies(self, question: Question) -> bool:
        if not self.applies_to:
            return True
        targets = {t.strip() for t in self.applies_to.split(",")}
        return bool(targets & {question.kind, question.answer_type} - {""})

    @property
    def applies_to_display(self) -> str:
        """``applies_to`` for the page: a question kind in the reader's words ("客观题"), an
        answer type as given (the codes stay in forms, imports and the API)."""
        labels = dict(Question.Kind.choices)
        parts = [t.strip() for t in self.applies_to.split(",") if t.strip()]
        return ", ".join(str(labels.get(t, t)) for t in parts)

    @property
    def stars(self) -> range:
        return range(self.min_score, self.max_score + 1)
