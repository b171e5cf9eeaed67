"""Rubrics in the browser: every rubric with its criteria, and a form for an organizer's own star
rubric (one criterion a line), so that a study with its own criteria needs no Django admin.
A rubric, once saved, is shared like the built-in ones; the admin still edits or deletes it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from annotation.models import Criterion, Rubric
from annotation.permissions import organizer_required

MAX_CRITERIA = 20
MAX_STARS = 10  # the annotator's keys give 1-9 and 0 for 10
KEY = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
RANGE = re.compile(r"^(\d{1,2})\s*-\s*(\d{1,2})$", re.ASCII)  # ASCII digits only
CRITERIA_HELP = gettext_lazy(
    "One criterion a line: key | English label | Chinese label | stars | what each star means, "
    "separated by ; (optional, as “English / 中文”). Keys: lower-case letters, digits and _; "
    "stars from 0 to 10, e.g. 1-5. Example: helpfulness | Helpfulness | 有用性 | 1-3 | "
    "Not helpful / 没有帮助; Partly helpful / 部分有帮助; Very helpful / 很有帮助"
)


@dataclass
class CriterionSpec:
    key: str
    label_en: str
    label_zh: str
    min_score: int
    max_score: int
    descriptions: list[dict[str, str]]


def _meanings(text: str, n: int, line: int) -> list[dict[str, str]]:
    if not text.strip():
        return []
    parts = [p.strip() for p in text.split(";")]
    if len(parts) != n:
        raise ValidationError(
            _("Line %(line)d: %(n)d stars need %(n)d meanings separated by ;, got %(got)d.")
            % {"line": line, "n": n, "got": len(parts)}
        )
    out = []
    for part in parts:
        en, _sep, zh = part.partition(" / ")
        out.append({"en": en.strip()[:300], "zh": (zh.strip() or en.strip())[:300]})
    return out


def _criterion(raw: str, line: int) -> CriterionSpec:
    cells = [c.strip() for c in raw.split("|")]
    if len(cells) < 4 or len(cells) > 5:
        raise ValidationError(
            _("Line %(line)d: write key | English label | Chinese label | stars | meanings.")
            % {"line": line}
        )
    key, label_en, label_zh, stars = cells[:4]
    if not KEY.match(key):
        raise ValidationError(
            _("Line %(line)d: %(key)s is not a key (lower-case letters, digits and _).")
            % {"line": line, "key": key[:40]}
        )
    if not label_en or len(label_en) > 200 or len(label_zh) > 200:
        raise ValidationError(_("Line %(line)d: give an English label (at most 200 characters).")
                              % {"line": line})  # fmt: skip
    m = RANGE.match(stars)
    low, high = (int(m.group(1)), int(m.group(2))) if m else (-1, -1)
    if not m or not 0 <= low < high <= MAX_STARS:
        raise ValidationError(
            _("Line %(line)d: stars must be written low-high between 0 and 10, e.g. 1-5.")
            % {"line": line}
        )
    meanings = _meanings(cells[4] if len(cells) == 5 else "", high - low + 1, line)
    return CriterionSpec(key, label_en, label_zh, low, high, meanings)


class RubricForm(forms.Form):
    key = forms.SlugField(
        max_length=80,
        label=gettext_lazy("Rubric key"),
        help_text=gettext_lazy("A short unique name, e.g. my-rubric; exports and the API use it."),
    )
    name_en = forms.CharField(max_length=200, label=gettext_lazy("Name (English)"))
    name_zh = forms.CharField(max_length=200, required=False, label=gettext_lazy("Name (Chinese)"))
    description = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        label=gettext_lazy("Description"),
    )
    criteria = forms.CharField(
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 6, "class": "wide"}),
        label=gettext_lazy("Criteria"),
        help_text=CRITERIA_HELP,
    )

    def clean_key(self) -> str:
        key = self.cleaned_data["key"]
        if Rubric.objects.filter(key=key).exists():
            raise ValidationError(_("A rubric with the key %(key)s exists.") % {"key": key})
        return key

    def clean_criteria(self) -> list[CriterionSpec]:
        lines = [(i, raw) for i, raw in enumerate(self.cleaned_data["criteria"].splitlines(), 1)
                 if raw.strip()]  # fmt: skip
        if not lines:
            raise ValidationError(_("Give at least one criterion."))
        if len(lines) > MAX_CRITERIA:
            raise ValidationError(_("At most %(n)d criteria.") % {"n": MAX_CRITERIA})
        errors, specs = [], []
        for i, raw in lines:
            try:
                specs.append(_criterion(raw, i))
            except ValidationError as e:
                errors.extend(e.messages)
        keys = [s.key for s in specs]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            errors.append(_("Each key once: %(keys)s.") % {"keys": ", ".join(twice)})
        if errors:
            raise ValidationError(errors)
        return specs


@transaction.atomic
def rubric_create(data: dict) -> Rubric:
    rubric = Rubric.objects.create(
        key=data["key"],
        name_en=data["name_en"],
        name_zh=data["name_zh"],
        description=data["description"],
        mode=Rubric.Mode.STAR,
    )
    Criterion.objects.bulk_create(
        Criterion(rubric=rubric, order=i, **vars(spec)) for i, spec in enumerate(data["criteria"])
    )
    return rubric


@organizer_required
@require_http_methods(["GET", "POST"])
def rubrics(request: HttpRequest) -> HttpResponse:
    """GET: every rubric and the form; POST: create a star rubric, then back to the new study."""
    form = RubricForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        rubric = rubric_create(form.cleaned_data)
        messages.success(request, _("Rubric %(name)s saved.") % {"name": rubric.name_en})
        return redirect(reverse("organize:study_new") + f"?rubric={rubric.pk}")
    context = {"form": form, "rubrics": Rubric.objects.prefetch_related("criteria")}
    status = 400 if form.is_bound else 200
    return render(request, "annotation/organizer/rubrics.html", context, status=status)
