"""LLM judges: configurations, prompt templates, runs and every call a run makes.

A judge is a rater: each JudgeConfig owns an annotation.Rater (kind and pool "judge"), and the
ratings it produces are ordinary Assignment + Rating (+ Score) rows. The tables here keep what only
judges have: the request, the raw output, parse status, tokens and cost of each call.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from annotation.models import Item, Rater, Rating, Rubric, Study
from annotation.models.catalogue import check_name_free, unique_per_owner
from evaluation import safety

# Prices per 1,000 tokens: the dearest models cost well under 1 US dollar per 1k tokens, so 1,000
# leaves room for any currency while refusing typos like 99,999 (docs/decisions/judges.md).
MAX_PRICE_PER_1K = Decimal(1000)
PRICE_VALIDATORS = [MinValueValidator(Decimal(0)), MaxValueValidator(MAX_PRICE_PER_1K)]
# The largest published account limits are in the tens of thousands of requests and the tens of
# millions of tokens per minute; these bounds leave room and refuse typos.
MAX_RPM = 1_000_000
MAX_TPM = 1_000_000_000
# The largest value every database holds in a PositiveSmallIntegerField.
SMALL_INT_MAX = 32767


def validate_env_name(value: str) -> None:
    # Only the *name* of an operator-approved variable is stored (see evaluation/safety.py).
    safety.validate_key_env(value)


def validate_judge_url(value: str) -> None:
    safety.validate_base_url(value)


def _bounded(field_class, label, lo, hi, **kwargs):
    """A number field that refuses values outside lo..hi (forms, the API and full_clean)."""
    return field_class(label, validators=[MinValueValidator(lo), MaxValueValidator(hi)], **kwargs)


def _count(label, most: int, **kwargs):
    """A count from 1 to `most`, in the smallest positive integer column that holds `most`."""
    small = most <= SMALL_INT_MAX
    field_class = models.PositiveSmallIntegerField if small else models.PositiveIntegerField
    return _bounded(field_class, label, 1, most, **kwargs)


def _own_limit(label, most: int, help_text):
    """A rate limit of the judge's account, 1 to `most` per minute; blank: none of its own."""
    return _count(label, most, null=True, blank=True, help_text=help_text)


def _made_by(**kwargs) -> models.ForeignKey:
    """The account that made the row; blank when it is gone, and no reverse accessor on users."""
    return models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        **kwargs,
    )


def _price(label, default: str) -> models.DecimalField:
    """A price per 1,000 tokens, between 0 and MAX_PRICE_PER_1K."""
    return models.DecimalField(
        label,
        max_digits=12,
        decimal_places=6,
        default=Decimal(default),
        validators=PRICE_VALIDATORS,
    )


class PromptTemplate(models.Model):
    # A template is written for one rubric mode: star scoring or pairwise comparison.
    Kind = Rubric.Mode

    class Parser(models.TextChoices):
        STARS = "stars", _("per-criterion stars (text or JSON)")
        ALIGNBENCH = "alignbench", _("AlignBench dimension dict with overall score")
        CHOICE = "choice", _("pairwise option A/B/C/D")
        RANKING = "ranking", _("ChineseAlpacaEval ranking list")

    # What an organizer writes (the form and the API); the rest is the server's.
    EDITABLE = (
        "key",
        "name",
        "kind",
        "parser",
        "system",
        "user",
        "hint_format",
        "json_instructions",
    )

    key = models.SlugField(_("key"), max_length=80)
    name = models.CharField(_("name"), max_length=200)
    kind = models.CharField(_("kind"), max_length=10, choices=Kind.choices)
    parser = models.CharField(_("parser"), max_length=20, choices=Parser.choices)
    system = models.TextField(
        _("system message"), blank=True, help_text=_("System message (optional).")
    )
    user = models.TextField(
        _("user message"),
        help_text=_("User message with {placeholders}; write {{ and }} for braces."),
    )
    hint_format = models.TextField(
        _("hint format"),
        blank=True,
        help_text=_(
            "How {hint_section} renders when the hint is shown, e.g. "
            "'The correct answer to user's question is: {hint}'."
        ),
    )
    json_instructions = models.TextField(
        _("JSON instructions"),
        blank=True,
        help_text=_("Appended when the server is asked for a JSON object."),
    )
    builtin = models.BooleanField(default=False)
    owner = _made_by()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-builtin", "key"]
        constraints = unique_per_owner("key", "prompttemplate_unique_key")

    def __str__(self) -> str:
        return self.key

    def clean(self) -> None:
        from evaluation.prompts import validate_template

        check_name_free(self, "key", with_shared=True)  # own and built-in keys
        validate_template(self)


class JudgeConfig(models.Model):
    class JsonMode(models.TextChoices):
        AUTO = "auto", _("auto (ask for JSON, fall back when refused)")
        ON = "on", _("always ask for a JSON object")
        OFF = "off", _("never (parse text)")

    name = models.CharField(_("name"), max_length=200)
    rater = models.OneToOneField(
        Rater, on_delete=models.PROTECT, related_name="judge_config", verbose_name=_("rater")
    )
    model = models.CharField(_("model"), max_length=200, default="gpt-4-0613")
    base_url = models.URLField(
        _("base URL"),
        max_length=500,
        default="https://api.openai.com/v1",
        validators=[validate_judge_url],
    )
    api_key_env = models.CharField(
        _("API key variable"),
        max_length=64,
        default="OPENAI_API_KEY",
        validators=[validate_env_name],
    )
    temperature = _bounded(models.FloatField, _("temperature"), 0.0, 2.0, default=0.0)
    max_tokens = _count(
        _("max tokens"),
        1_000_000,
        default=1024,
        help_text=_("At most this many output tokens per call."),
    )
    seed = models.IntegerField(_("seed"), null=True, blank=True, default=0)
    template = models.ForeignKey(
        PromptTemplate,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("prompt template"),
        help_text=_("Blank: the built-in template that matches the study's rubric."),
    )
    price_in_per_1k = _price(_("input price per 1k tokens"), "0.03")
    price_out_per_1k = _price(_("output price per 1k tokens"), "0.06")
    json_mode = models.CharField(
        _("JSON mode"), max_length=4, choices=JsonMode.choices, default=JsonMode.AUTO
    )
    concurrency = _count(
        _("concurrency"),
        512,
        default=8,
        help_text=_("At most this many calls at once."),
    )
    # Rate limits of the judge's account, kept on top of whatever the server announces in its
    # x-ratelimit-* headers (evaluation/ratelimit.py). Blank: only the server's announcements.
    rpm_limit = _own_limit(
        _("requests per minute"),
        MAX_RPM,
        _("At most this many requests per minute (blank: no own limit)."),
    )
    tpm_limit = _own_limit(
        _("tokens per minute"),
        MAX_TPM,
        _(
            "At most this many tokens per minute, prompt plus max_tokens as OpenAI counts them "
            "(blank: no own limit)."
        ),
    )
    timeout_s = models.FloatField(
        _("timeout (seconds)"), default=120.0, validators=[MinValueValidator(0.1)]
    )
    max_attempts = _count(
        _("max attempts"),
        20,
        default=6,
        help_text=_("Tries per call before it is recorded as failed."),
    )
    owner = _made_by(verbose_name=_("owner"))
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    class Meta:
        ordering = ["name"]
        verbose_name = _("judge")
        verbose_name_plural = _("judges")
        constraints = [
            *unique_per_owner("name", "judgeconfig_unique_name"),
            models.CheckConstraint(
                condition=Q(price_in_per_1k__gte=0)
                & Q(price_in_per_1k__lte=MAX_PRICE_PER_1K)
                & Q(price_out_per_1k__gte=0)
                & Q(price_out_per_1k__lte=MAX_PRICE_PER_1K),
                name="judgeconfig_prices_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        check_name_free(self, "name", with_shared=False)  # the owner's judges only
        if self.api_key_env and self.base_url:
            try:
                safety.check_key_host(self.api_key_env, self.base_url)
            except ValidationError as e:
                raise ValidationError({"base_url": e.messages}) from None

    @property
    def key_is_set(self) -> bool:
        """Whether this server process has the approved key variable set (never its value)."""
        return safety.key_is_set(self.api_key_env)


class JudgeRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        DONE = "done", _("done")
        FAILED = "failed", _("failed")
        CANCELLED = "cancelled", _("cancelled")
        STOPPED = "stopped", _("stopped: budget reached")

    class Mode(models.TextChoices):
        LIVE = "live", _("live: calls now, at the judge's concurrency")
        BATCH = "batch", _("Batch API: half price, results within a day")

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    FINISHED = (Status.DONE, Status.CANCELLED, Status.STOPPED)

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judge_runs")
    judge = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="runs")
    template = models.ForeignKey(PromptTemplate, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    mode = models.CharField(max_length=5, choices=Mode.choices, default=Mode.LIVE)
    # The Batch API batch in progress (empty between rounds); a restarted worker finds it again.
    batch_id = models.CharField(max_length=200, blank=True)
    both_orders = models.BooleanField(default=False)
    repeat_rate = models.FloatField(
        default=0.02, validators=[MinValueValidator(0.0), MaxValueValidator(0.5)]
    )
    limit = models.PositiveIntegerField(
        null=True, blank=True, help_text=_("At most this many items.")
    )
    seed = models.IntegerField(default=0)
    # Snapshot of the judge's request settings and prices at creation, so a resumed run sends
    # the same requests (same cache keys) and costs stay tokens x the prices it ran with.
    params = models.JSONField(default=dict)
    price_in_per_1k = models.DecimalField(max_digits=12, decimal_places=6)
    price_out_per_1k = models.DecimalField(max_digits=12, decimal_places=6)
    # Optional spending cap: no new call starts once the run's cost reaches it, so it is passed
    # by at most the calls already in flight. The estimate is the pre-flight's, kept to compare.
    budget = models.DecimalField(
        max_digits=14,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0))],
        help_text=_("Stop the run when its cost reaches this amount (blank: no cap)."),
    )
    cost_estimate = models.DecimalField(max_digits=24, decimal_places=6, null=True, blank=True)
    # Counters, recomputed from the calls after every batch of writes.
    n_planned = models.PositiveIntegerField(default=0)
    n_done = models.PositiveIntegerField(default=0)
    n_ok = models.PositiveIntegerField(default=0)
    n_parse_failed = models.PositiveIntegerField(default=0)
    n_call_failed = models.PositiveIntegerField(default=0)
    n_cached = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=18, decimal_places=9, default=Decimal(0))
    cancel_requested = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=200, blank=True)
    # host:pid of the process executing the run, so a resume can tell a dead executor from a
    # live one at once instead of waiting for the heartbeat to go stale.
    worker = models.CharField(max_length=200, blank=True)
    created_by = _made_by()
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(repeat_rate__gte=0) & Q(repeat_rate__lte=0.5),
                name="judgerun_repeat_rate_range",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.judge} on {self.study})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def percent(self) -> int:
        return int(100 * self.n_done / self.n_planned) if self.n_planned else 0


class JudgeCall(models.Model):
    """One planned request of a run: (item, purpose) is unique per run, so a resumed run cannot
    call twice for the same thing. Cached calls reuse an earlier call's output and cost nothing."""

    class Purpose(models.TextChoices):
        PRIMARY = "primary", _("primary")
        SWAP = "swap", _("other order (both-orders mode)")
        REPEAT = "repeat", _("repeat (judge self-consistency)")

    class Status(models.TextChoices):
        OK = "ok", _("answered")
        FAILED = "failed", _("call failed")

    class Parse(models.TextChoices):
        OK = "ok", _("parsed")
        FAILED = "failed", _("parse failed")
        NONE = "", _("not parsed")

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="calls")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judge_calls")
    purpose = models.CharField(max_length=10, choices=Purpose.choices)
    left_is_a = models.BooleanField(default=True)
    hint_shown = models.BooleanField(default=False)
    request_hash = models.CharField(max_length=64, db_index=True)
    request = models.JSONField(help_text=_("The full request body: model, messages, parameters."))
    status = models.CharField(max_length=10, choices=Status.choices)
    error = models.TextField(blank=True, help_text=_("Why the call failed, after all attempts."))
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    cached = models.BooleanField(default=False)
    cache_source = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    raw_output = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    parse_status = models.CharField(max_length=10, choices=Parse.choices, blank=True, default="")
    parse_error = models.TextField(blank=True)
    parsed = models.JSONField(null=True, blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=18, decimal_places=9, default=Decimal(0))
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    rating = models.ForeignKey(
        Rating, null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_calls"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "item", "purpose"], name="judgecall_one_per_purpose"
            ),
        ]
        indexes = [
            models.Index(fields=["run", "parse_status"], name="judgecall_run_parse"),
            models.Index(fields=["request_hash", "status"], name="judgecall_cache"),
        ]

    def __str__(self) -> str:
        return f"call {self.pk} ({self.purpose}, item {self.item_id})"
