"""A study's quality page for its organizer: quality checks (gold items and attention checks),
annotators' quality figures and flags, exclusions from the report, and the approve/reject list
for Prolific or MTurk. Owner (or superuser) only: someone else's study is a 404."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from annotation import checks
from annotation.models import PairChoice, Rubric, Study
from annotation.permissions import get_study_for_organizer, organizer_required
from config.lazy import lazy_module

if TYPE_CHECKING:
    from annotation import quality
else:
    quality = lazy_module("annotation.quality")

MAX_UPLOAD_BYTES = 2 * 1024 * 1024


class GoldUploadForm(forms.Form):
    format = forms.ChoiceField(
        choices=[("csv", "CSV"), ("json", "JSON")], initial="csv", label=gettext_lazy("Format")
    )
    file = forms.FileField(required=False, label=gettext_lazy("File"))
    text = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        max_length=MAX_UPLOAD_BYTES,
        label=gettext_lazy("Or paste the records"),
    )

    def content(self) -> str:
        upload = self.cleaned_data.get("file")
        if upload is None:
            return self.cleaned_data.get("text") or ""
        if upload.size > MAX_UPLOAD_BYTES:
            raise ValidationError(_("The file is larger than 2 MB."))
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ValidationError(_("The file is not UTF-8 text.")) from e


class AttentionForm(forms.Form):
    instruction = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=checks.MAX_TEXT,
        label=gettext_lazy("Instruction shown as the question"),
    )
    text_a = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=checks.MAX_TEXT,
        label=gettext_lazy("Answer A"),
    )
    text_b = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=checks.MAX_TEXT,
        label=gettext_lazy("Answer B (pairwise)"),
    )
    reference = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=checks.MAX_TEXT,
        label=gettext_lazy("Reference answer"),
        help_text=gettext_lazy(
            "Shown when the item shows hints. If your questions have reference answers and the "
            "study shows hints, give one here too, or the check is the item without one."
        ),
    )
    choices = forms.MultipleChoiceField(
        required=False,
        choices=PairChoice.choices,
        widget=forms.CheckboxSelectMultiple,
        label=gettext_lazy("Accepted choices (pairwise; A is answer A)"),
    )
    stars = forms.CharField(
        required=False,
        max_length=checks.MAX_CELL,
        label=gettext_lazy("Accepted stars"),
    )

    def __init__(self, *args, study: Study | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Only the fields of the study's mode: a star study has no answer B and no choices.
        if study is not None:
            pairwise = study.mode == Rubric.Mode.PAIRWISE
            for name in ("stars",) if pairwise else ("text_b", "choices"):
                del self.fields[name]
            if not pairwise:
                self.fields["stars"].label = stars_label(study)

    def answer(self, study: Study) -> dict:
        if study.mode == Rubric.Mode.PAIRWISE:
            return {"choices": self.cleaned_data["choices"]}
        return {
            "scores": checks.scores_from_text(
                self.cleaned_data["stars"], example=checks.stars_example(study)
            )
        }


def stars_label(study: Study) -> str:
    """The accepted-stars label with an example in the study's own criteria and ranges."""
    example = checks.stars_example(study)
    if not example:
        return _("Accepted stars")
    return _("Accepted stars (e.g. %(example)s)") % {"example": example}


def _page(request: HttpRequest, study: Study, *, status: int = 200, **context) -> HttpResponse:
    context.setdefault("gold_form", GoldUploadForm())
    context.setdefault("attention_form", AttentionForm(study=study))
    table = quality.study_quality(study)
    context.update(
        study=study,
        check_items=checks.check_items(study),
        counts=quality.check_items_count(study),
        annotators=table.astype(object).where(table.notna(), None).to_dict("records"),
        platforms=[("prolific", "Prolific"), ("mturk", "MTurk")],
        pairwise=study.mode == Rubric.Mode.PAIRWISE,
        criteria=study.rubric.criteria.all(),
    )
    return render(request, "annotation/organizer/quality.html", context, status=status)


@organizer_required
@require_GET
def quality_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_organizer(request.user, study_id)
    return _page(request, study)


def _form_errors(form: forms.Form, error: ValidationError) -> None:
    form.add_error(None, error.messages)


@organizer_required
@require_POST
def gold_upload(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_organizer(request.user, study_id)
    form = GoldUploadForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            n = checks.gold_upload(
                study=study, text=form.content(), fmt=form.cleaned_data["format"]
            )
        except ValidationError as e:
            _form_errors(form, e)
        else:
            messages.success(request, _("%(n)d items marked as gold.") % {"n": n})
            return redirect("organize:study_quality", study.pk)
    return _page(request, study, gold_form=form, status=400)


@organizer_required
@require_POST
def attention_create(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_organizer(request.user, study_id)
    form = AttentionForm(request.POST, study=study)
    if form.is_valid():
        try:
            checks.attention_check_create(
                study=study,
                instruction=form.cleaned_data["instruction"],
                text_a=form.cleaned_data["text_a"],
                text_b=form.cleaned_data.get("text_b", ""),
                reference=form.cleaned_data.get("reference", ""),
                answer=form.answer(study),
            )
        except ValidationError as e:
            _form_errors(form, e)
        else:
            messages.success(request, _("Attention check added."))
            return redirect("organize:study_quality", study.pk)
    return _page(request, study, attention_form=form, status=400)


@organizer_required
@require_POST
def check_remove(request: HttpRequest, study_id: int, item_id: int) -> HttpResponse:
    study = get_study_for_organizer(request.user, study_id)
    try:
        checks.check_remove(study=study, item_id=item_id)
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
    else:
        messages.success(request, _("Check removed."))
    return redirect("organize:study_quality", study.pk)


@organizer_required
@require_POST
def exclusion(request: HttpRequest, study_id: int, action: str) -> HttpResponse:
    """Exclude an annotator (with a reason) or lift an exclusion; the raw ratings stay."""
    study = get_study_for_organizer(request.user, study_id)
    pseudonym = request.POST.get("rater", "")
    try:
        if action == "exclude":
            quality.exclusion_add(
                study=study,
                pseudonym=pseudonym,
                reason=request.POST.get("reason", ""),
                user=request.user,
            )
            messages.success(request, _("Annotator excluded from the report."))
        elif action == "lift":
            quality.exclusion_lift(study=study, pseudonym=pseudonym)
            messages.success(request, _("Exclusion lifted."))
        else:
            raise Http404
    except ValidationError as e:
        messages.error(request, " ".join(e.messages))
        return _page(request, study, status=400)
    return redirect("organize:study_quality", study.pk)


@organizer_required
@require_GET
def approvals_download(request: HttpRequest, study_id: int, platform: str) -> HttpResponse:
    """The approve/reject CSV to upload to the platform (worker ids: owner or superuser only,
    which get_study_for_organizer already ensures)."""
    study = get_study_for_organizer(request.user, study_id)
    if platform not in quality.PLATFORM_COLUMNS:
        raise Http404
    out = io.StringIO()
    csv.writer(out).writerows(quality.approval_rows(study, platform))
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    filename = f"{study.public_id}-{platform}-approve-reject.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
