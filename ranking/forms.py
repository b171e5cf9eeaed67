"""GET forms of the report and comparison pages; the API reads the same query parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from annotation.forms import NAMED_NUMBER_ERRORS, DecimalNumberField
from annotation.models import Rater, Study
from config.lazy import lazy_module

if TYPE_CHECKING:
    from ranking import selectors, services
    from ranking.services import ReportFilters
else:  # pandas and the statistics: loaded by the first report (config/lazy.py)
    selectors = lazy_module("ranking.selectors")
    services = lazy_module("ranking.services")

MAX_SETTINGS = 4
RANKINGS = [
    ("star", _("Star mean (overall)")),
    ("total", _("LLMEval-2 total score")),
    ("points", _("Points")),
    ("elo", _("Elo")),
    ("bt", _("Bradley-Terry")),
]
BT_TIE_CHOICES = [("half", _("tie = half a win")), ("exclude", _("ties left out"))]
# ranking.stats.leaderboards.BT_TIES, here without loading the statistics (a test holds them equal).
BT_TIES = tuple(rule for rule, _label in BT_TIE_CHOICES)
RATER_KINDS = [("all", _("all raters")), ("human", _("humans")), ("judge", _("LLM judges"))]


def _share_field(label: Any) -> DecimalNumberField:
    """An optional threshold between 0 and 1 (a minimum accuracy or consistency), in ASCII
    digits: FloatField would read "٠.٥" as 0.5 where the other forms refuse such digits."""
    return DecimalNumberField(
        label=label,
        required=False,
        min_value=0,
        max_value=1,
        error_messages=NAMED_NUMBER_ERRORS,
        widget=forms.NumberInput(attrs={"step": "0.05", "placeholder": "0-1"}),
    )


class ReportFilterForm(forms.Form):
    """Filters of one study's report. Choices come from the study, so a value that the study
    does not have is a validation error rather than a silently empty report."""

    pool = forms.MultipleChoiceField(
        label=_("Pool"), required=False, widget=forms.CheckboxSelectMultiple
    )
    criterion = forms.MultipleChoiceField(
        label=_("Criteria"), required=False, widget=forms.CheckboxSelectMultiple
    )
    task_type = forms.MultipleChoiceField(
        label=_("Task type"), required=False, widget=forms.SelectMultiple(attrs={"size": 4})
    )
    start = forms.DateField(
        label=_("From"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    end = forms.DateField(
        label=_("Until (inclusive)"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    min_accuracy = _share_field(_("Min. accuracy"))
    min_consistency = _share_field(_("Min. consistency"))

    exclude_simulated = forms.BooleanField(label=_("Leave out simulated raters"), required=False)
    bt_ties = forms.ChoiceField(
        label=_("Bradley-Terry ties"),
        required=False,
        choices=BT_TIE_CHOICES,
        help_text=_("A tie as half a win for each side, or tied matches left out of the fit."),
    )

    def __init__(self, data=None, *, study: Study, choices=None, **kwargs):
        super().__init__(data, **kwargs)
        self.study = study
        choices = choices or selectors.study_filter_choices(study)
        # Every pool is offered (a study may not have raters of a pool yet); the study's own
        # pools come first.
        pools = dict(choices["pools"])
        pools.update({k: str(v) for k, v in Rater.Pool.choices if k not in pools})
        offered = {
            "pool": list(pools.items()),
            "criterion": choices["criteria"],
            "task_type": choices["task_types"],
        }
        for name, options in offered.items():
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = options

    def clean(self):
        data = super().clean()
        if data.get("start") and data.get("end") and data["start"] > data["end"]:
            raise ValidationError(_("The start date is after the end date."))
        return data

    def to_filters(self) -> ReportFilters:
        """The cleaned data as report filters (call after ``is_valid()``)."""
        d = self.cleaned_data
        return services.ReportFilters.build(
            pools=d.get("pool") or (),
            criteria=d.get("criterion") or (),
            task_types=d.get("task_type") or (),
            start=d.get("start"),
            end=d.get("end"),
            min_accuracy=d.get("min_accuracy"),
            min_consistency=d.get("min_consistency"),
            exclude_simulated=bool(d.get("exclude_simulated")),
            bt_ties=d.get("bt_ties") or "half",
        )


class SettingForm(forms.Form):
    """One column of the comparison: a study, optional pool / task-type filters, and which of its
    rankings to compare."""

    study = forms.ModelChoiceField(label=_("Study"), queryset=Study.objects.none(), required=False)
    pool = forms.MultipleChoiceField(label=_("Pools"), required=False, choices=Rater.Pool.choices)
    task_type = forms.CharField(label=_("Task type"), required=False, max_length=100)
    ranking = forms.ChoiceField(
        label=_("Ranking"),
        choices=[("", _("auto (star or Points)")), *RANKINGS],
        required=False,
    )
    kind = forms.ChoiceField(label=_("Raters"), choices=RATER_KINDS, required=False)
    label = forms.CharField(label=_("Label"), required=False, max_length=80)

    def __init__(self, *args, studies, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["study"].queryset = studies

    def clean(self):
        data = super().clean()
        study = data.get("study")
        if study is not None and not data.get("ranking"):
            data["ranking"] = "points" if study.mode == "pairwise" else "star"
        data["kind"] = data.get("kind") or "all"
        return data

    def filters(self) -> ReportFilters:
        d = self.cleaned_data
        return services.ReportFilters.build(
            pools=d.get("pool") or (),
            task_types=[d["task_type"]] if d.get("task_type") else (),
        )

    def display_label(self) -> str:
        d = self.cleaned_data
        if d.get("label"):
            return d["label"]
        parts = [d["study"].name, f"{d['ranking']}/{d['kind']}"]
        if d.get("pool"):
            parts.append("+".join(d["pool"]))
        if d.get("task_type"):
            parts.append(d["task_type"])
        return " · ".join(parts)


def setting_forms(data, *, user_studies) -> list[SettingForm]:
    """The comparison's settings, prefixed ``s1`` .. ``s4`` (query parameters ``s1-study`` ...)."""
    bound = data if data and any(k.startswith("s") and "-" in k for k in data) else None
    return [
        SettingForm(bound, prefix=f"s{i}", studies=user_studies) for i in range(1, MAX_SETTINGS + 1)
    ]


def chosen_settings(forms_: list[SettingForm]) -> tuple[list[SettingForm], list[str]]:
    """Valid settings that name a study, and error messages of the invalid ones."""
    chosen: list[SettingForm] = []
    errors: list[str] = []
    for i, f in enumerate(forms_, start=1):
        if not f.is_bound:
            continue
        if not f.is_valid():
            for field, errs in f.errors.items():
                errors.extend(f"s{i}-{field}: {e}" for e in errs)
            continue
        if f.cleaned_data.get("study"):
            chosen.append(f)
    return chosen, errors
