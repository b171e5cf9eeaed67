from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.db import models
from django.utils.translation import gettext_lazy as _

from evaluation import safety
from evaluation.models import JudgeConfig, JudgeRun, PromptTemplate
from evaluation.prompts import PLACEHOLDERS
from evaluation.services import MAX_LIMIT, SEEDS

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

JUDGE_FIELDS = [
    "name",
    "model",
    "base_url",
    "api_key_env",
    "temperature",
    "max_tokens",
    "seed",
    "template",
    "price_in_per_1k",
    "price_out_per_1k",
    "json_mode",
    "concurrency",
    "rpm_limit",
    "tpm_limit",
    "timeout_s",
    "max_attempts",
]


# The number fields of a judge (read from the model): Python reads other scripts' digits ("٣" is
# 3); a setting that spends money is typed in ASCII digits or refused, never silently converted.
JUDGE_NUMBER_FIELDS = [
    name
    for name in JUDGE_FIELDS
    if isinstance(
        JudgeConfig._meta.get_field(name),
        (models.IntegerField, models.FloatField, models.DecimalField),
    )
]


def non_ascii_numbers(data) -> dict[str, StrOrPromise]:
    """{field: error} for judge number fields given as text with non-ASCII characters."""
    errors: dict[str, StrOrPromise] = {}
    for name in JUDGE_NUMBER_FIELDS:
        value = data.get(name) if hasattr(data, "get") else None
        if isinstance(value, str) and not value.isascii():
            errors[name] = _("Write the number with the digits 0-9.")
    return errors


class JudgeConfigForm(forms.ModelForm):
    class Meta:
        model = JudgeConfig
        fields = JUDGE_FIELDS
        help_texts = {
            "base_url": _(
                "Any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, a gateway. Private and "
                "local addresses only when the server's operator allows them "
                "(JUDGE_ALLOWED_HOSTS)."
            ),
            "price_in_per_1k": _("Per 1,000 input tokens, between 0 and 1000."),
            "price_out_per_1k": _("Per 1,000 output tokens, between 0 and 1000."),
        }

    def __init__(self, *args, templates=None, **kwargs):
        super().__init__(*args, **kwargs)
        if templates is not None:
            self.fields["template"].queryset = templates
        # Only the variables the operator approved, each with whether this server has it set
        # (never its value). The model's validator checks the name again.
        self.fields["api_key_env"] = forms.ChoiceField(
            label=_("API key variable"),
            choices=key_env_choices(),
            initial="OPENAI_API_KEY",
            help_text=_(
                "The environment variable on the server that holds the API key; the key is never "
                "stored. The operator approves these variables (JUDGE_API_KEY_ENVS)."
            ),
        )

    def clean(self):
        cleaned = super().clean()
        for name, error in non_ascii_numbers(self.data).items():
            self.add_error(name, error)
        return cleaned

    def service_kwargs(self) -> dict:
        return {k: self.cleaned_data[k] for k in JUDGE_FIELDS}


def key_env_choices() -> list[tuple[str, str]]:
    return [
        (name, f"{name} — {_('set') if safety.key_is_set(name) else _('not set')}")
        for name in safety.approved_key_envs()
    ]


class PromptTemplateForm(forms.ModelForm):
    class Meta:
        model = PromptTemplate
        fields = list(PromptTemplate.EDITABLE)
        widgets = {
            "user": forms.Textarea(attrs={"rows": 14}),
            "system": forms.Textarea(attrs={"rows": 3}),
            "json_instructions": forms.Textarea(attrs={"rows": 3}),
            "hint_format": forms.Textarea(attrs={"rows": 2}),
        }

    placeholders = PLACEHOLDERS


def judge_label(judge: JudgeConfig) -> str:
    status = _("set") if judge.key_is_set else _("not set")
    return f"{judge.name} ({judge.model}; {judge.api_key_env} {status})"


# What a run's options may be, the same on the page (RunStartForm) and in the API (api.RunIn).
RUN_BOUNDS: dict[str, dict[str, Any]] = {
    "repeat_rate": {"min_value": 0, "max_value": 0.5},
    "limit": {"min_value": 1, "max_value": MAX_LIMIT},
    "seed": {"min_value": SEEDS[0], "max_value": SEEDS[1]},
    "budget": {"min_value": 0, "max_digits": 14, "decimal_places": 6},
}


class RunStartForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.none(), label=_("Judge"))
    both_orders = forms.BooleanField(required=False, label=_("Judge each pair in both orders"))
    repeat_rate = forms.FloatField(
        initial=0.02,
        label=_("Repeat rate"),
        help_text=_("Share of items judged twice, to measure the judge's self-consistency."),
        **RUN_BOUNDS["repeat_rate"],
    )
    limit = forms.IntegerField(
        required=False,
        label=_("At most N items"),
        help_text=_("Items this judge has not judged yet: a second run takes the next N."),
        **RUN_BOUNDS["limit"],
    )
    seed = forms.IntegerField(initial=0, label=_("Seed"), **RUN_BOUNDS["seed"])
    budget = forms.DecimalField(
        required=False,
        label=_("Budget (stop when the cost reaches it)"),
        help_text=_("Blank: no cap. Calls already in flight when it is reached still finish."),
        **RUN_BOUNDS["budget"],
    )
    mode = forms.ChoiceField(
        choices=JudgeRun.Mode.choices,
        initial=JudgeRun.Mode.LIVE,
        required=False,
        label=_("Run mode"),
        help_text=_("Batch API: half the price, results within a day, where the server offers it."),
    )
    # Set once the organizer has seen the pre-flight and the cost estimate.
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, judges=None, pairwise=True, **kwargs):
        super().__init__(*args, **kwargs)
        if not pairwise:  # a star study has no pairs to judge in both orders
            del self.fields["both_orders"]
        if judges is not None:
            self.fields["judge"].queryset = judges
        self.fields["judge"].label_from_instance = judge_label

    def run_options(self) -> dict:
        data = self.cleaned_data
        return {
            "judge": data["judge"],
            "both_orders": data.get("both_orders", False),
            "repeat_rate": data["repeat_rate"],
            "limit": data["limit"],
            "seed": data["seed"] or 0,
            "mode": data.get("mode") or JudgeRun.Mode.LIVE,
        }
