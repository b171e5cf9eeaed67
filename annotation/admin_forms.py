"""Forms of the admin's custom views (the "Import data" page)."""

from __future__ import annotations

from django import forms

from annotation.importers import FORMATS


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        if isinstance(data, list | tuple):
            return [super(MultipleFileField, self).clean(d, initial) for d in data]
        return [super().clean(data, initial)]


class ImportForm(forms.Form):
    format = forms.ChoiceField(
        choices=[(f.name, f.name) for f in FORMATS.values()],
        help_text="See docs/import-formats.md.",
    )
    files = MultipleFileField(help_text="One or more files of that format.")
    folder = forms.ChoiceField(
        required=False,
        choices=[
            ("", "-"),
            ("human-score", "human-score (LLMEval-2 human panel)"),
            ("gpt-score", "gpt-score (GPT-4 judge)"),
        ],
        help_text="For llmeval2-scores: which score folder the files come from.",
    )
    dataset = forms.CharField(required=False, help_text="Default: per format.")
    study = forms.CharField(required=False, help_text="For imported ratings; default per format.")
    rater = forms.CharField(required=False)
    rater_kind = forms.ChoiceField(
        required=False, choices=[("", "-"), ("human", "human"), ("judge", "judge")]
    )
    rubric = forms.CharField(required=False, help_text="Rubric key, for generic star ratings.")
    dry_run = forms.BooleanField(required=False, help_text="Check and count; write nothing.")
