"""Domain model: what is rated (datasets, questions, responses), how (studies, rubrics, items) and
by whom (raters, assignments, ratings).

Integrity lives in the database: unique and check constraints guard what the services promise
(one first exposure per rater and item, one rating per assignment, canonical pair order).
"""

from __future__ import annotations

import secrets
import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


def _public_id() -> str:
    # Opaque, unguessable ids for anything an annotator's URL may carry.
    return secrets.token_urlsafe(12)


SHUFFLE_MAX = 2**31 - 1


def _shuffle_key() -> int:
    # A random position per item: the engine scans items of one load level in this order from a
    # random pivot, which gives a random pick through an index instead of ORDER BY random().
    return secrets.randbelow(SHUFFLE_MAX)


class Dataset(models.Model):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=200, blank=True, help_text="Where the data came from.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


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

    key = models.SlugField(max_length=80, unique=True)
    name_en = models.CharField(max_length=200)
    name_zh = models.CharField(max_length=200, blank=True)
    mode = models.CharField(max_length=10, choices=Mode.choices)
    description = models.TextField(blank=True)
    builtin = models.BooleanField(default=False, help_text="Shipped rubrics are read-only.")

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.name_en

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
    def stars(self) -> range:
        return range(self.min_score, self.max_score + 1)


class PairChoice(models.TextChoices):
    """Pairwise answers in canonical orientation: A is the item's response_a, whatever side
    it was shown on."""

    A = "A", _("A better")
    B = "B", _("B better")
    TIE = "tie", _("tie")
    BOTH_BAD = "both_bad", _("both bad")


class Study(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", _("draft")
        LIVE = "live", _("live")
        PAUSED = "paused", _("paused")
        CLOSED = "closed", _("closed")

    class PairDesign(models.TextChoices):
        ALL = "all", _("all pairs per question")
        BASELINE = "baseline", _("against a baseline model")
        SAMPLED = "sampled", _("k sampled pairs per question")

    class HintPolicy(models.TextChoices):
        SHOWN = "shown", _("shown")
        HIDDEN = "hidden", _("hidden")
        RANDOM = "random", _("randomised per exposure")

    name = models.CharField(max_length=200, unique=True)
    public_id = models.CharField(max_length=32, unique=True, default=_public_id, editable=False)
    description = models.TextField(blank=True)
    instructions = models.TextField(blank=True, help_text="Shown to annotators.")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="studies")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="studies",
    )
    mode = models.CharField(max_length=10, choices=Rubric.Mode.choices)
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="studies")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    # Item design.
    pair_design = models.CharField(
        max_length=10, choices=PairDesign.choices, default=PairDesign.ALL, blank=True
    )
    baseline_llm = models.ForeignKey(
        LLM, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    pairs_per_question = models.PositiveIntegerField(null=True, blank=True)
    selection = models.JSONField(
        default=dict, blank=True, help_text="The dataset subset: task types, kinds, LLMs."
    )
    # Assignment design.
    ratings_per_item = models.PositiveSmallIntegerField(default=3)
    repeat_rate = models.FloatField(default=0.02)
    hint_policy = models.CharField(
        max_length=10, choices=HintPolicy.choices, default=HintPolicy.HIDDEN
    )
    # A lease, not a booking: page views, submits and the item page's heartbeat renew it, so a
    # short one costs a working annotator nothing and a stranger's entry holds an item briefly.
    reservation_timeout = models.PositiveIntegerField(
        default=180,
        help_text="Lease in seconds: an open item goes back to the pool after this long without "
        "activity from its annotator (page view, submit or the item page's heartbeat).",
    )
    admit_onsite = models.BooleanField(default=True)
    admit_crowd = models.BooleanField(default=False)
    admit_public = models.BooleanField(default=False)
    quota_onsite = models.PositiveIntegerField(null=True, blank=True, help_text="Per annotator.")
    quota_crowd = models.PositiveIntegerField(null=True, blank=True, help_text="Per worker.")
    quota_public = models.PositiveIntegerField(null=True, blank=True, help_text="Per person.")
    completion_code = models.CharField(
        max_length=64, blank=True, help_text="Crowd: shown once the worker's quota is met."
    )
    no_more_work_code = models.CharField(
        max_length=64,
        blank=True,
        db_default="",
        help_text="Crowd: shown instead when the study has no more work for a worker before "
        "their quota is met (or when they arrive after it is full).",
    )
    completion_url = models.URLField(blank=True, help_text="Crowd redirect at the end.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(
                condition=Q(repeat_rate__gte=0) & Q(repeat_rate__lte=0.5),
                name="study_repeat_rate_range",
            ),
            models.CheckConstraint(condition=Q(ratings_per_item__gte=1), name="study_n_positive"),
            models.CheckConstraint(
                condition=Q(mode__in=["star", "pairwise"]), name="study_mode_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def admits(self, pool: str) -> bool:
        return {
            Rater.Pool.ONSITE: self.admit_onsite,
            Rater.Pool.CROWD: self.admit_crowd,
            Rater.Pool.PUBLIC: self.admit_public,
            Rater.Pool.JUDGE: True,
        }.get(pool, False)

    def quota_for(self, pool: str) -> int | None:
        return {
            Rater.Pool.ONSITE: self.quota_onsite,
            Rater.Pool.CROWD: self.quota_crowd,
            Rater.Pool.PUBLIC: self.quota_public,
        }.get(pool)

    def is_owned_by(self, user) -> bool:
        return bool(user.is_superuser or (self.owner_id and self.owner_id == user.id))


class Item(models.Model):
    """What is rated: one response (star) or an unordered pair of responses to one question
    (pairwise), stored with response_a.id < response_b.id."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="items")
    response_a = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    response_b = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Denormalised counters, kept under row locks by the assignment engine: submitted first
    # ratings and open reservations. Their sum never exceeds the study's target.
    n_ratings = models.PositiveIntegerField(default=0)
    n_reserved = models.PositiveIntegerField(default=0)
    shuffle = models.PositiveIntegerField(default=_shuffle_key, editable=False)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "response_a"],
                condition=Q(response_b__isnull=True),
                name="item_unique_single",
            ),
            models.UniqueConstraint(
                fields=["study", "response_a", "response_b"],
                condition=Q(response_b__isnull=False),
                name="item_unique_pair",
            ),
            models.CheckConstraint(
                condition=Q(response_b__isnull=True) | Q(response_a__lt=F("response_b")),
                name="item_pair_canonical_order",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "n_ratings", "n_reserved"], name="item_next"),
            # The engine's pick: items of one study at one load level, in shuffle order.
            models.Index(
                F("study"), F("n_ratings") + F("n_reserved"), F("shuffle"), name="item_pick"
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.pk}"

    @property
    def is_pair(self) -> bool:
        return self.response_b_id is not None


class Rater(models.Model):
    class Kind(models.TextChoices):
        HUMAN = "human", _("human")
        JUDGE = "judge", _("LLM judge")

    class Pool(models.TextChoices):
        ONSITE = "onsite", _("onsite")
        CROWD = "crowd", _("crowd")
        PUBLIC = "public", _("public")
        JUDGE = "judge", _("LLM judge")

    kind = models.CharField(max_length=10, choices=Kind.choices)
    pool = models.CharField(max_length=10, choices=Pool.choices)
    name = models.CharField(max_length=200, blank=True, help_text="For named and judge raters.")
    # A pseudonym is what organizers see in exports; never the account or the worker id.
    pseudonym = models.CharField(max_length=32, unique=True, default=_public_id, editable=False)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="rater",
    )
    platform = models.CharField(
        max_length=20, blank=True, help_text="prolific, mturk or blank for other sources."
    )
    external_id = models.CharField(max_length=200, blank=True, help_text="Worker id.")
    nickname = models.CharField(max_length=100, blank=True)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The organizer who created this onsite account.",
    )
    consented_at = models.DateTimeField(null=True, blank=True)
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="judge") & Q(pool="judge"))
                | (Q(kind="human") & ~Q(pool="judge")),
                name="rater_kind_matches_pool",
            ),
            models.UniqueConstraint(
                fields=["pool", "platform", "external_id"],
                condition=~Q(external_id=""),
                name="rater_unique_external_id",
            ),
            models.UniqueConstraint(
                fields=["name"],
                condition=~Q(name="") & Q(user__isnull=True) & Q(external_id=""),
                name="rater_unique_named",
            ),
        ]

    def __str__(self) -> str:
        return self.name or self.nickname or f"{self.pool}-{self.pseudonym}"


class Assignment(models.Model):
    """One exposure of an item to a rater, with everything about how it was shown."""

    class Status(models.TextChoices):
        SERVED = "served", _("served")
        SUBMITTED = "submitted", _("submitted")
        SKIPPED = "skipped", _("skipped")
        EXPIRED = "expired", _("expired")

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    rater = models.ForeignKey(Rater, on_delete=models.CASCADE, related_name="assignments")
    seq = models.PositiveIntegerField(
        default=0, help_text="Position in this rater's sequence within the study."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SERVED)
    left_is_a = models.BooleanField(default=True, help_text="Response A was shown on the left.")
    hint_shown = models.BooleanField(default=False)
    is_repeat = models.BooleanField(default=False)
    repeat_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="repeats"
    )
    served_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    skipped_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    active_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="Active time measured in the page."
    )
    # A keyed hash of the client address that reserved this exposure (crowd and public pools
    # only), never the address itself: it caps open reservations per address.
    client_tag = models.CharField(
        max_length=16, blank=True, default="", db_default="", editable=False
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            # One first exposure per rater and item; a skip keeps it, so a skipped item is never
            # served to that rater again.
            models.UniqueConstraint(
                fields=["item", "rater"],
                condition=Q(is_repeat=False),
                name="assignment_one_first_exposure",
            ),
            models.CheckConstraint(
                condition=Q(is_repeat=False) | Q(repeat_of__isnull=False),
                name="assignment_repeat_has_origin",
            ),
            models.CheckConstraint(
                condition=~Q(status="submitted") | Q(submitted_at__isnull=False),
                name="assignment_submitted_has_time",
            ),
        ]
        indexes = [
            models.Index(fields=["rater", "study", "status"], name="assignment_rater_open"),
            models.Index(fields=["study", "status", "expires_at"], name="assignment_expiry"),
            models.Index(fields=["item", "status"], name="assignment_item_status"),
            models.Index(fields=["rater", "study", "seq"], name="assignment_rater_seq"),
            # The per-address cap on open items counts live leases of one address in a study.
            models.Index(
                fields=["study", "client_tag"],
                condition=Q(status="served"),
                name="assignment_open_by_client",
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.public_id}"

    @property
    def duration_s(self) -> float | None:
        if self.submitted_at is None:
            return None
        return (self.submitted_at - self.served_at).total_seconds()


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
