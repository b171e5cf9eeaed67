from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from evaluation.models import JudgeConfig, PromptTemplate
from evaluation.prompts import PLACEHOLDERS

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
    "timeout_s",
    "max_attempts",
]


class JudgeConfigForm(forms.ModelForm):
    class Meta:
        model = JudgeConfig
        fields = JUDGE_FIELDS
        help_texts = {
            "api_key_env": _(
                "The NAME of the environment variable that holds the API key "
                "(e.g. OPENAI_API_KEY), never the key."
            ),
            "base_url": _("Any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, a gateway."),
        }

    def __init__(self, *args, templates=None, **kwargs):
        super().__init__(*args, **kwargs)
        if templates is not None:
            self.fields["template"].queryset = templates

    def service_kwargs(self) -> dict:
        return {k: self.cleaned_data[k] for k in JUDGE_FIELDS}


class PromptTemplateForm(forms.ModelForm):
    class Meta:
        model = PromptTemplate
        fields = [
            "key",
            "name",
            "kind",
            "parser",
            "system",
            "user",
            "hint_format",
            "json_instructions",
        ]
        widgets = {
            "user": forms.Textarea(attrs={"rows": 14}),
            "system": forms.Textarea(attrs={"rows": 3}),
            "json_instructions": forms.Textarea(attrs={"rows": 3}),
            "hint_format": forms.Textarea(attrs={"rows": 2}),
        }

    placeholders = PLACEHOLDERS


class RunStartForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.none())
    both_orders = forms.BooleanField(required=False, label=_("Judge each pair in both orders"))
    repeat_rate = forms.FloatField(initial=0.02, min_value=0, max_value=0.5)
    limit = forms.IntegerField(required=False, min_value=1, label=_("At most N items"))
    seed = forms.IntegerField(initial=0)

    def __init__(self, *args, judges=None, **kwargs):
        super().__init__(*args, **kwargs)
        if judges is not None:
            self.fields["judge"].queryset = judges
