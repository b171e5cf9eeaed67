from __future__ import annotations

from django import forms
from django.contrib.auth.models import User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.utils.translation import gettext_lazy as _

from annotation import limits
from annotation.models import LLM, Dataset, Rubric, Study


class StudyForm(forms.Form):
    """Everything study_create needs; the model's own checks run again in the service."""

    name = forms.CharField(max_length=200, label=_("Name"))
    dataset = forms.ModelChoiceField(Dataset.objects.all(), label=_("Dataset"))
    mode = forms.ChoiceField(choices=Rubric.Mode.choices, label=_("Mode"))
    rubric = forms.ModelChoiceField(Rubric.objects.all(), label=_("Rubric"))
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    task_types = forms.CharField(
        required=False,
        label=_("Task types"),
        help_text=_("Comma-separated; blank for all."),
    )
    max_questions = forms.IntegerField(
        min_value=1, max_value=limits.MAX_QUESTIONS, required=False, label=_("Max questions")
    )
    llms = forms.CharField(
        required=False, label=_("LLMs"), help_text=_("Comma-separated names; blank for all.")
    )
    pair_design = forms.ChoiceField(
        choices=Study.PairDesign.choices, initial=Study.PairDesign.ALL, label=_("Pair design")
    )
    baseline_llm = forms.ModelChoiceField(LLM.objects.all(), required=False, label=_("Baseline"))
    pairs_per_question = forms.IntegerField(
        min_value=1, max_value=limits.MAX_PAIRS_PER_QUESTION, required=False, label=_("k pairs")
    )
    ratings_per_item = forms.IntegerField(
        min_value=1,
        max_value=limits.MAX_RATINGS_PER_ITEM,
        initial=3,
        label=_("Ratings per item (N)"),
    )
    repeat_rate = forms.FloatField(
        min_value=0, max_value=0.5, initial=0.02, label=_("Hidden repeat rate")
    )
    hint_policy = forms.ChoiceField(
        choices=Study.HintPolicy.choices, initial=Study.HintPolicy.HIDDEN, label=_("Hint")
    )
    admit_onsite = forms.BooleanField(required=False, initial=True, label=_("Onsite"))
    admit_crowd = forms.BooleanField(required=False, label=_("Crowd"))
    admit_public = forms.BooleanField(required=False, label=_("Public"))
    quota_onsite = forms.IntegerField(
        min_value=1, max_value=limits.MAX_QUOTA, required=False, label=_("Onsite quota")
    )
    quota_crowd = forms.IntegerField(
        min_value=1, max_value=limits.MAX_QUOTA, required=False, label=_("Crowd quota")
    )
    quota_public = forms.IntegerField(
        min_value=1, max_value=limits.MAX_QUOTA, required=False, label=_("Public quota")
    )
    reservation_timeout = forms.IntegerField(
        min_value=30,
        max_value=limits.MAX_RESERVATION_TIMEOUT,
        initial=180,
        label=_("Reservation timeout (s)"),
        help_text=_("A lease that the annotator's activity renews; 120-300 s is plenty."),
    )
    completion_code = forms.CharField(max_length=64, required=False, label=_("Completion code"))
    no_more_work_code = forms.CharField(
        max_length=64,
        required=False,
        label=_("No-more-work code"),
        help_text=_("Crowd: shown when the study runs out of work before a worker's quota."),
    )
    completion_url = forms.URLField(required=False, label=_("Completion URL"))

    def clean(self):
        data = super().clean()
        rubric, mode = data.get("rubric"), data.get("mode")
        if rubric and mode and rubric.mode != mode:
            self.add_error("rubric", _("This rubric is for another mode."))
        return data

    SERVICE_FIELDS = (
        "name", "dataset", "mode", "rubric", "instructions", "pair_design", "baseline_llm",
        "pairs_per_question", "ratings_per_item", "repeat_rate", "hint_policy", "admit_onsite",
        "admit_crowd", "admit_public", "quota_onsite", "quota_crowd", "quota_public",
        "reservation_timeout", "completion_code", "no_more_work_code", "completion_url",
    )  # fmt: skip

    def service_kwargs(self) -> dict:
        d = self.cleaned_data
        selection = {}
        if d["task_types"]:
            selection["task_types"] = [t.strip() for t in d["task_types"].split(",") if t.strip()]
        if d["llms"]:
            selection["llms"] = [t.strip() for t in d["llms"].split(",") if t.strip()]
        if d["max_questions"]:
            selection["max_questions"] = d["max_questions"]
        return {"selection": selection, **{k: d[k] for k in self.SERVICE_FIELDS}}


class AnnotatorCreateForm(forms.Form):
    username = forms.CharField(max_length=150, label=_("Username"))
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        label=_("Password"),
        help_text=_("Leave blank to get an invitation link instead."),
    )

    def clean_username(self):
        # The account stores the NFKC form ('²' becomes '2'): check that form, or a lookalike of
        # a taken name would pass here and fail in the database.
        username = User.normalize_username(self.cleaned_data["username"].strip())
        UnicodeUsernameValidator()(username)
        if User.objects.filter(username__iexact=username).exists():
            raise forms.ValidationError(_("This username is taken."))
        return username

    def clean_password(self):
        password = self.cleaned_data.get("password") or ""
        if password and len(password) < 8:
            raise forms.ValidationError(_("Use at least 8 characters."))
        return password


class JoinForm(forms.Form):
    nickname = forms.CharField(max_length=40, label=_("Nickname"))
    consent = forms.BooleanField(
        label=_("I agree that my ratings are stored and published anonymously for research.")
    )
    # A honeypot: people leave it empty, naive bots fill every field.
    website = forms.CharField(required=False, widget=forms.HiddenInput)
