from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib.auth.models import User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.utils import translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop, ngettext

from annotation import limits
from annotation.catalogue import Choice, dataset_llms, dataset_task_types, duplicate_groups
from annotation.models import LLM, Dataset, Rubric, Study
from annotation.permissions import datasets_visible, rubrics_visible
from annotation.services import IMPORT_OPTIONS

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

    from annotation.importers import Format

_ASCII_INT = re.compile(r"[+-]?[0-9]+")
_ASCII_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
MAX_DIGITS = 20

# Django 6.1's label for a menu's blank choice is not in its own zh_Hans catalogue yet. Kept in
# ours (LOCALE_PATHS are read first), so the study, judge-run and comparison menus are not
# English on a Chinese page.
DJANGO_BLANK_CHOICE = gettext_noop("- Select an option -")


NAMED_NUMBER_ERRORS = {
    # Issue 13: an error names the value the organizer typed.
    "invalid": _("%(value)s is not a number written with the digits 0-9."),
    "min_value": _("Must be at least %(limit_value)s; got %(value)s."),
    "max_value": _("Must be at most %(limit_value)s; got %(value)s."),
    "too_long": _("%(value)s… has too many digits."),
}


def _checked_number(field: forms.Field, value: Any, pattern: re.Pattern[str]) -> str | None:
    if value in field.empty_values:
        return None
    text = str(value).strip()
    if len(text) > MAX_DIGITS and pattern.fullmatch(text):
        raise forms.ValidationError(
            field.error_messages["too_long"], code="too_long", params={"value": text[:12]}
        )
    if not pattern.fullmatch(text):
        raise forms.ValidationError(
            field.error_messages["invalid"], code="invalid", params={"value": text[:40]}
        )
    return text


class WholeNumberField(forms.IntegerField):
    """An integer typed with ASCII digits only: Python's int() would read '٣' as 3, and a
    5,000-digit number would reach the database."""

    def to_python(self, value: Any) -> int | None:
        text = _checked_number(self, value, _ASCII_INT)
        return None if text is None else int(text)


class DecimalNumberField(forms.FloatField):
    # django-stubs gives FloatField the to_python of its base IntegerField (int); Django's
    # FloatField.to_python returns a float, as this does.
    def to_python(self, value: Any) -> float | None:  # type: ignore[override]
        text = _checked_number(self, value, _ASCII_DECIMAL)
        return None if text is None else float(text)


def _field[F: forms.Field](form: forms.BaseForm, name: str, kind: type[F]) -> F:
    """A form's own copy of a declared field, with its type (Form.fields holds plain Fields)."""
    field = form.fields[name]
    if not isinstance(field, kind):
        raise TypeError(f"{name} is a {type(field).__name__}, not a {kind.__name__}")
    return field


def _picker(label: StrOrPromise, invalid: StrOrPromise) -> forms.MultipleChoiceField:
    """Tick boxes over what the chosen dataset has (choices set per form); none ticked: all."""
    return forms.MultipleChoiceField(
        required=False,
        label=label,
        help_text=_("None ticked: all."),
        widget=forms.CheckboxSelectMultiple,
        error_messages={"invalid_choice": invalid},
    )


def _number[F: forms.Field](cls: type[F], label: StrOrPromise, **kwargs: Any) -> F:
    return cls(label=label, error_messages=NAMED_NUMBER_ERRORS, **kwargs)


def _whole(label: StrOrPromise, least: int, most: int, **kwargs: Any) -> WholeNumberField:
    return _number(WholeNumberField, label, min_value=least, max_value=most, **kwargs)


def _optional_count(label: StrOrPromise, most: int, **kwargs: Any) -> WholeNumberField:
    """A whole number from 1 to `most`, or empty (no limit)."""
    return _whole(label, 1, most, required=False, **kwargs)


QUOTA_HELP = _("Ratings one annotator of this pool may submit, repeats included; blank: no limit.")


def _hidden_rate(label: StrOrPromise, **kwargs: Any) -> DecimalNumberField:
    """The share of hidden exposures of one kind (repeats, quality checks): 0 to 0.5."""
    return _number(DecimalNumberField, label, min_value=0, max_value=0.5, **kwargs)


class RubricChoiceField(forms.ModelChoiceField):
    """Rubrics by their name in the page's language, with the key when two of them share that
    name (a copy keeps its original's name), so that the two can be told apart."""

    _names: tuple[str | None, Any, Counter[str]] | None = None

    def label_from_instance(self, obj: Rubric) -> str:
        name = obj.display_name
        return f"{name} ({obj.key})" if self._name_counts()[name] > 1 else name

    def _name_counts(self) -> Counter[str]:
        """How many of the offered rubrics have each name, counted once per language and
        queryset (the form sets its queryset per user)."""
        language, queryset = translation.get_language(), self.queryset
        names = self._names
        if names is None or names[0] != language or names[1] is not queryset:
            counts = (
                Counter(r.display_name for r in queryset) if queryset is not None else Counter()
            )
            names = self._names = (language, queryset, counts)
        return names[2]


class StudyForm(forms.Form):
    """Everything study_create and study_update need; the model's own checks run again in the
    service. The task-type and LLM pickers list what the chosen dataset has."""

    name = forms.CharField(max_length=200, label=_("Name"))
    dataset = forms.ModelChoiceField(
        Dataset.objects.none(),  # set per user in __init__
        label=_("Dataset"),
        error_messages={"invalid_choice": _("Dataset %(value)s does not exist.")},
    )
    mode = forms.ChoiceField(
        choices=Rubric.Mode.choices,
        label=_("Mode"),
        error_messages={"invalid_choice": _("Mode %(value)s is neither star nor pairwise.")},
    )
    rubric = RubricChoiceField(
        Rubric.objects.none(),  # set per user in __init__
        label=_("Rubric"),
        error_messages={"invalid_choice": _("Rubric %(value)s does not exist.")},
    )
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, label=_("Instructions")
    )
    task_types = _picker(_("Task types"), _("%(value)s is not a task type of this dataset."))
    max_questions = _optional_count(
        _("Max questions"),
        limits.MAX_QUESTIONS,
        help_text=_("The first N questions of the selection; blank: all of them."),
    )
    llms = _picker(_("LLMs"), _("%(value)s is not an LLM of this dataset."))
    pair_design = forms.ChoiceField(
        choices=Study.PairDesign.choices,
        initial=Study.PairDesign.ALL,
        label=_("Pair design"),
        help_text=_("Pairwise only, with the baseline or k below; star studies ignore them."),
    )
    baseline_llm = forms.ModelChoiceField(
        LLM.objects.none(),  # the chosen dataset's LLMs, set in __init__
        required=False,
        label=_("Baseline"),
        error_messages={"invalid_choice": _("Baseline %(value)s is not an LLM of this dataset.")},
    )
    pairs_per_question = _optional_count(_("k pairs"), limits.MAX_PAIRS_PER_QUESTION)
    ratings_per_item = _whole(
        _("Ratings per item (N)"), 1, limits.MAX_RATINGS_PER_ITEM, initial=3,
        help_text=_("Each item gets exactly N ratings from different annotators."),
    )  # fmt: skip
    repeat_rate = _hidden_rate(
        _("Hidden repeat rate"),
        initial=0.02,
        help_text=_("0 to 0.5: the share of items served again to the same annotator, unmarked, "
                    "to measure consistency; they never count toward N."),
    )  # fmt: skip
    hint_policy = forms.ChoiceField(
        choices=Study.HintPolicy.choices,
        initial=Study.HintPolicy.HIDDEN,
        label=_("Hint"),
        help_text=_("The question's reference answer, where the dataset has one."),
    )
    assignment_mode = forms.ChoiceField(
        choices=Study.AssignmentMode.choices,
        initial=Study.AssignmentMode.UNIFORM,
        required=False,
        label=_("Assignment"),
    )
    check_rate = _hidden_rate(
        _("Hidden quality-check rate"),
        initial=0,
        required=False,
        help_text=_("0 to 0.5: the share of gold items and attention checks (set them up on the "
                    "study's quality page); 0: none."),
    )  # fmt: skip
    admit_onsite = forms.BooleanField(required=False, initial=True, label=_("Onsite"))
    admit_crowd = forms.BooleanField(required=False, label=_("Crowd"))
    admit_public = forms.BooleanField(required=False, label=_("Public"))
    quota_onsite = _optional_count(_("Onsite quota"), limits.MAX_QUOTA, help_text=QUOTA_HELP)
    quota_crowd = _optional_count(_("Crowd quota"), limits.MAX_QUOTA, help_text=QUOTA_HELP)
    quota_public = _optional_count(_("Public quota"), limits.MAX_QUOTA, help_text=QUOTA_HELP)
    reservation_timeout = _whole(
        _("Reservation timeout (s)"),
        30,
        limits.MAX_RESERVATION_TIMEOUT,
        initial=180,
        help_text=_("A lease that the annotator's activity renews; 120-300 s is plenty."),
    )
    completion_code = forms.CharField(
        max_length=64,
        required=False,
        label=_("Completion code"),
        help_text=_("Crowd: shown on the last page once the worker has finished; the code you "
                    "set on Prolific or MTurk."),
    )  # fmt: skip
    no_more_work_code = forms.CharField(
        max_length=64,
        required=False,
        label=_("No-more-work code"),
        help_text=_("Crowd: shown when the study runs out of work before a worker's quota."),
    )
    completion_url = forms.URLField(
        required=False,
        label=_("Completion URL"),
        help_text=_("Prolific: the button back, e.g. "
                    "https://app.prolific.com/submissions/complete?cc=CODE"),
    )  # fmt: skip

    def __init__(
        self, *args: Any, user: Any, dataset: Dataset | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        # Only the datasets the user may read: another organizer's is refused as a missing one,
        # and its task types and LLMs are never offered.
        self.datasets = datasets_visible(user)
        _field(self, "dataset", forms.ModelChoiceField).queryset = self.datasets
        # Likewise the rubrics: another organizer's is refused as a missing one.
        _field(self, "rubric", forms.ModelChoiceField).queryset = rubrics_visible(user)
        self.chosen_dataset = dataset or self._dataset_from_input()
        self.task_type_choices = (
            dataset_task_types(self.chosen_dataset) if self.chosen_dataset else []
        )
        self.llm_choices = dataset_llms(self.chosen_dataset) if self.chosen_dataset else []
        _field(self, "task_types", forms.ChoiceField).choices = [
            (c.value, _choice_label(c, _questions)) for c in self.task_type_choices
        ]
        _field(self, "llms", forms.ChoiceField).choices = [
            (c.value, _choice_label(c, _answers)) for c in self.llm_choices
        ]
        if self.chosen_dataset:
            _field(self, "baseline_llm", forms.ModelChoiceField).queryset = LLM.objects.filter(
                name__in=[c.value for c in self.llm_choices]
            )

    def _dataset_from_input(self) -> Dataset | None:
        raw = self.data.get("dataset") if self.is_bound else self.initial.get("dataset")
        if isinstance(raw, Dataset):
            return raw
        raw = str(raw or "")
        if not raw.isascii() or not raw.isdigit() or len(raw) > 18:  # a database id, nothing else
            return None
        return self.datasets.filter(pk=int(raw)).first()

    @property
    def duplicate_llms(self) -> list[list]:
        return duplicate_groups(self.llm_choices)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        rubric, mode = data.get("rubric"), data.get("mode")
        if rubric and mode and rubric.mode != mode:
            self.add_error(
                "rubric",
                _("Rubric %(rubric)s is for %(its)s studies, not %(mode)s.")
                % {"rubric": rubric.key, "its": rubric.mode, "mode": mode},
            )
        return data

    SERVICE_FIELDS = (
        "name", "dataset", "mode", "rubric", "instructions", "pair_design", "baseline_llm",
        "pairs_per_question", "ratings_per_item", "repeat_rate", "hint_policy", "assignment_mode",
        "check_rate", "admit_onsite",
        "admit_crowd", "admit_public", "quota_onsite", "quota_crowd", "quota_public",
        "reservation_timeout", "completion_code", "no_more_work_code", "completion_url",
    )  # fmt: skip

    def service_kwargs(self) -> dict:
        d = self.cleaned_data
        selection: dict = {}
        if d["task_types"]:
            selection["task_types"] = list(d["task_types"])
        if d["llms"]:
            selection["llms"] = list(d["llms"])
        if d["max_questions"]:
            selection["max_questions"] = d["max_questions"]
        kwargs = {k: d[k] for k in self.SERVICE_FIELDS}
        # Optional design fields: left empty, they keep the model's defaults.
        kwargs["assignment_mode"] = d["assignment_mode"] or Study.AssignmentMode.UNIFORM
        kwargs["check_rate"] = d["check_rate"] or 0
        return {"selection": selection, **kwargs}

    @classmethod
    def initial_for(cls, study: Study) -> dict:
        """The form's initial values for an existing study (editing a draft)."""
        initial = {k: getattr(study, k) for k in cls.SERVICE_FIELDS}
        initial["pair_design"] = study.pair_design or Study.PairDesign.ALL
        selection = study.selection or {}
        initial["task_types"] = selection.get("task_types", [])
        initial["llms"] = selection.get("llms", [])
        initial["max_questions"] = selection.get("max_questions")
        return initial


def _questions(n: int) -> str:
    return ngettext("%(n)s question", "%(n)s questions", n) % {"n": n}


def _answers(n: int) -> str:
    return ngettext("%(n)s answer", "%(n)s answers", n) % {"n": n}


def _choice_label(choice: Choice, counted: Callable[[int], str]) -> str:
    label = f"{choice.value} ({counted(choice.count)})"
    if choice.duplicate_of:
        label += " ⚠ " + str(_("near-duplicate of %(names)s")) % {
            "names": ", ".join(choice.duplicate_of)
        }
    return label


class AnnotatorCreateForm(forms.Form):
    username = forms.CharField(max_length=150, label=_("Username"))
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        label=_("Password"),
        help_text=_("Leave blank to get an invitation link instead."),
    )

    def clean_username(self) -> str:
        # The account stores the NFKC form ('²' becomes '2'): check that form, or a lookalike of
        # a taken name would pass here and fail in the database.
        username = User.normalize_username(self.cleaned_data["username"].strip())
        UnicodeUsernameValidator()(username)
        if User.objects.filter(username__iexact=username).exists():
            raise forms.ValidationError(_("This username is taken."))
        return username

    def clean_password(self) -> str:
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


class BulkAnnotatorsForm(forms.Form):
    names = forms.CharField(
        label=_("Usernames or e-mail addresses, one a line"),
        widget=forms.Textarea(attrs={"rows": 6}),
        max_length=60_000,
    )
    access = forms.ChoiceField(
        label=_("How they sign in"),
        choices=[
            ("password", _("Generated passwords (shown once, on the next page)")),
            ("invite", _("Invitation links (they choose a password)")),
        ],
        initial="password",
        widget=forms.RadioSelect,
    )


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """One or more uploaded files, as a list."""

    def __init__(self, *args: Any, max_files: int = 50, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        self.max_files = max_files
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        files = data if isinstance(data, list | tuple) else [data]
        if len(files) > self.max_files:
            raise forms.ValidationError(
                _("%(n)d files: upload at most %(max)d at a time.")
                % {"n": len(files), "max": self.max_files}
            )
        return [super(MultipleFileField, self).clean(f, initial) for f in files]


class DataImportForm(forms.Form):
    """The in-app import page: the same options as the import command, as form fields."""

    OPTIONS = IMPORT_OPTIONS

    format = forms.ChoiceField(label=_("Format"))
    # The form's metaclass moves declared fields into base_fields, so this does not shadow
    # BaseForm.files (the uploads) at run time; the stubs cannot see that.
    files = MultipleFileField(  # type: ignore[assignment]
        label=_("Files"), help_text=_("One or more files of that format.")
    )
    dataset = forms.CharField(
        required=False,
        max_length=200,
        label=_("Dataset name"),
        help_text=_("Needed for your own JSONL or CSV; others have a default."),
    )
    rubric = forms.ChoiceField(
        required=False, label=_("Rubric (for star ratings in your own files)")
    )
    study = forms.CharField(
        required=False, max_length=200, label=_("Study name (for imported ratings)")
    )
    rater = forms.CharField(required=False, max_length=200, label=_("Rater name"))
    rater_kind = forms.ChoiceField(
        required=False,
        label=_("Rater kind"),
        choices=[("", "—"), ("human", _("human")), ("judge", _("LLM judge"))],
    )
    folder = forms.ChoiceField(
        required=False,
        label=_("Score folder (LLMEval-2 scores)"),
        choices=[
            ("", "—"),
            ("human-score", _("human-score (LLMEval-2 human panel)")),
            ("gpt-score", _("gpt-score (GPT-4 judge)")),
        ],
    )

    def __init__(self, *args: Any, formats: Mapping[str, Format], user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.formats = formats
        _field(self, "format", forms.ChoiceField).choices = [(name, name) for name in formats]
        # The rubrics the importer may use: star ones (only the generic formats' star ratings
        # take one), never another organizer's key.
        visible = rubrics_visible(user).filter(mode=Rubric.Mode.STAR)
        keys = sorted(set(visible.values_list("key", flat=True)))
        _field(self, "rubric", forms.ChoiceField).choices = [("", "—")] + [(k, k) for k in keys]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        spec = self.formats.get(data.get("format", ""))
        if spec is None:
            return data
        for name in self.OPTIONS:
            if data.get(name) and name not in spec.options:
                self.add_error(
                    name,
                    _("The %(format)s format does not use this field; leave it empty.")
                    % {"format": spec.name},
                )
        if spec.name in ("jsonl", "csv") and not data.get("dataset", "").strip():
            self.add_error("dataset", _("Name the dataset: your own JSONL or CSV files need one."))
        if spec.name == "llmeval2-scores" and not (data.get("folder") or data.get("rater")):
            # An upload keeps only the file's name, not the folder that says whose scores it has.
            self.add_error(
                "folder",
                _("Choose the folder the score files come from (human-score or gpt-score), or "
                  "give the rater's name and kind."),
            )  # fmt: skip
        if data.get("folder") and spec.name != "llmeval2-scores":
            self.add_error("folder", _("Only LLMEval-2 score files come from a score folder."))
        return data

    def options(self) -> dict[str, str | None]:
        return {name: self.cleaned_data.get(name) or None for name in self.OPTIONS}
