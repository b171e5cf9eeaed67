"""How and by whom: studies, their items (one response, or a pair), raters (people and judges)
and assignments (one exposure of an item to a rater)."""

from __future__ import annotations

import random
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotation.models._ids import _public_id, _shuffle_key
from annotation.models.catalogue import (
    LLM,
    Dataset,
    Question,
    Response,
    Rubric,
    check_name_free,
    unique_per_owner,
)


class PairChoice(models.TextChoices):
    """Pairwise answers in canonical orientation: A is the item's response_a, whatever side
    it was shown on."""

    A = "A", _("A better")
    B = "B", _("B better")
    TIE = "tie", _("tie")
    BOTH_BAD = "both_bad", _("both bad")

    @classmethod
    def from_shown(cls, shown: str, *, left_is_a: bool) -> PairChoice:
        """What the rater picked as shown ("left", "right", "tie", "both_bad") -> the canonical
        choice, given whether response A was shown on the left. ValueError for anything else."""
        if shown in ("left", "right"):
            return cls.A if (shown == "left") == left_is_a else cls.B
        if shown in (cls.TIE, cls.BOTH_BAD):
            return cls(shown)
        raise ValueError(f"not a pairwise choice: {shown[:40]!r}")

    def shown(self, *, left_is_a: bool) -> str:
        """The side as the rater saw it ("left" / "right"), or "tie" / "both_bad"."""
        if self in (PairChoice.A, PairChoice.B):
            return "left" if (self == PairChoice.A) == left_is_a else "right"
        return str(self.value)

    def swapped(self) -> PairChoice:
        """The same judgement with the responses exchanged (A <-> B)."""
        return {PairChoice.A: PairChoice.B, PairChoice.B: PairChoice.A}.get(self, self)

    @property
    def score_a(self) -> float:
        """Response A's score: A 1, B 0, a tie or both bad a draw (see ranking/stats/schema)."""
        from ranking.stats.schema import CHOICE_SCORE_A  # pure stats; no import at load time

        return CHOICE_SCORE_A[self.value]


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

    class AssignmentMode(models.TextChoices):
        UNIFORM = "uniform", _("uniform random")
        ADAPTIVE = "adaptive", _("adaptive (where rankings are least certain)")

    class HintPolicy(models.TextChoices):
        SHOWN = "shown", _("shown")
        HIDDEN = "hidden", _("hidden")
        RANDOM = "random", _("randomised per exposure")

    name = models.CharField(max_length=200)
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
    assignment_mode = models.CharField(
        max_length=10,
        choices=AssignmentMode.choices,
        default=AssignmentMode.UNIFORM,
        db_default=AssignmentMode.UNIFORM,
        help_text="Uniform: every item equally likely. Adaptive: the next human exposure goes "
        "where it most reduces ranking uncertainty (exact-N caps and blinding unchanged).",
    )
    check_rate = models.FloatField(
        default=0.0,
        db_default=0.0,
        help_text="Share of exposures that are hidden quality checks (gold items and attention "
        "checks), mixed in like the repeats; 0 for none.",
    )
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
            *unique_per_owner("name", "study_unique_name"),
            models.CheckConstraint(
                condition=Q(repeat_rate__gte=0) & Q(repeat_rate__lte=0.5),
                name="study_repeat_rate_range",
            ),
            models.CheckConstraint(
                condition=Q(check_rate__gte=0) & Q(check_rate__lte=0.5),
                name="study_check_rate_range",
            ),
            models.CheckConstraint(condition=Q(ratings_per_item__gte=1), name="study_n_positive"),
            models.CheckConstraint(
                condition=Q(mode__in=["star", "pairwise"]), name="study_mode_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # The owner's studies only: another organizer's, or the command line's, are not theirs
        # to know about.
        check_name_free(self, "name", with_shared=False)

    def admits_rater(self, rater: Rater) -> bool:
        """The study takes the rater's pool; an onsite account also needs to be one the study's
        organizer made (or a shared one, made without an inviter, or a study without an owner):
        otherwise an organizer could sign in with an account of their own roster and read
        another organizer's questions and answers by rating their onsite study."""
        if not self.admits(rater.pool):
            return False
        if rater.pool != Rater.Pool.ONSITE or self.owner_id is None:
            return True
        return rater.invited_by_id is None or rater.invited_by_id == self.owner_id

    def admits(self, pool: str) -> bool:
        admitted: dict[str, bool] = {
            Rater.Pool.ONSITE: self.admit_onsite,
            Rater.Pool.CROWD: self.admit_crowd,
            Rater.Pool.PUBLIC: self.admit_public,
            Rater.Pool.JUDGE: True,
        }
        return admitted.get(pool, False)

    def draws_hint(self, rng: random.Random) -> bool:
        """Whether an exposure shows the reference answer: always (shown), on a fair coin drawn
        from rng (random) or never (hidden)."""
        if self.hint_policy == self.HintPolicy.SHOWN:
            return True
        if self.hint_policy == self.HintPolicy.RANDOM:
            return rng.random() < 0.5
        return False

    def quota_for(self, pool: str) -> int | None:
        quotas: dict[str, int | None] = {
            Rater.Pool.ONSITE: self.quota_onsite,
            Rater.Pool.CROWD: self.quota_crowd,
            Rater.Pool.PUBLIC: self.quota_public,
        }
        return quotas.get(pool)


class Item(models.Model):
    """What is rated: one response (star) or an unordered pair of responses to one question
    (pairwise), stored with response_a.id < response_b.id."""

    class CheckKind(models.TextChoices):
        NONE = "", _("regular item")
        GOLD = "gold", _("gold item (known answer)")
        ATTENTION = "attention", _("attention check")

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
    # Quality checks: a gold item has a known answer; an attention check's text tells the
    # annotator what to answer. Check items are served hidden at the study's check_rate, at most
    # once per rater, outside the exact-N coverage, and their ratings stay out of model statistics.
    check_kind = models.CharField(
        max_length=10, choices=CheckKind.choices, blank=True, default="", db_default=""
    )
    # The accepted answer, canonical orientation: pairwise {"choices": ["A", "tie"]};
    # star {"scores": {"<criterion key>": [min, max]}}.
    check_answer = models.JSONField(default=dict, blank=True)
    # Adaptive studies: items are offered highest priority first (how much a rating of this item
    # is expected to reduce ranking uncertainty), kept by engine_adaptive.study_priorities_refresh
    # away from the request path; 0 in uniform studies.
    priority = models.FloatField(default=0.0, db_default=0.0, editable=False)

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
            # The adaptive pick: regular items of one study, highest priority first.
            models.Index(
                F("study"),
                F("priority").desc(),
                F("n_ratings") + F("n_reserved"),
                F("shuffle"),
                name="item_priority",
                condition=Q(check_kind=""),
            ),
        ]

    def __str__(self) -> str:
        return f"item {self.pk}"


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
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="For named and judge raters: the organizer whose import or judge made it "
        "(blank: the command line's, shared).",
    )
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
                fields=["owner", "name"],
                condition=~Q(name="")
                & Q(user__isnull=True)
                & Q(external_id="")
                & Q(owner__isnull=False),
                name="rater_unique_named_owner",
            ),
            models.UniqueConstraint(
                fields=["name"],
                condition=~Q(name="")
                & Q(user__isnull=True)
                & Q(external_id="")
                & Q(owner__isnull=True),
                name="rater_unique_named",
            ),
        ]

    def __str__(self) -> str:
        return self.name or self.nickname or f"{self.pool}-{self.pseudonym}"

    def clean(self) -> None:
        """A named rater (no account, no worker id) is unique by name among its owner's."""
        if not self.name or self.user_id is not None or self.external_id:
            return
        if "\x00" in self.name:
            raise ValidationError({"name": gettext("Null characters are not allowed.")})
        named = Rater.objects.filter(name=self.name, user__isnull=True, external_id="")
        named = named.filter(owner_id=self.owner_id) if self.owner_id else named.filter(owner=None)
        if named.exclude(pk=self.pk).exists():
            said = gettext("A rater named %(name)s already exists.") % {"name": repr(self.name)}
            raise ValidationError({"name": said})


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
