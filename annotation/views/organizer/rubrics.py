"""Rubrics in the browser: the rubrics an organizer may read (the built-in ones, their own, those
their studies use) with their criteria, and a form for an organizer's own star rubric (one
criterion a line), so that a study with its own criteria needs no Django admin. An organizer's
rubric is theirs alone (another organizer gets a 404); they edit or delete it here while no study
uses it, and copy it as a new rubric once one does (annotation.rubric_services)."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from annotation import selectors
from annotation.limits import parse_id
from annotation.models import Rubric
from annotation.permissions import organizer_required, rubrics_owned, rubrics_visible
from annotation.rubric_services import (
    CriterionSpec,
    RubricInUse,
    free_copy_key,
    rubric_create,
    rubric_delete,
    rubric_initial,
    rubric_update,
)

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

APPLIES_HELP = gettext_lazy(
    "A sixth cell, optional, limits a criterion to some questions: their kinds or answer "
    "types, separated by commas, e.g. objective."
)


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
    if len(cells) < 4 or len(cells) > 6:
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
    meanings = _meanings(cells[4] if len(cells) >= 5 else "", high - low + 1, line)
    applies_to = ",".join(t.strip() for t in (cells[5] if len(cells) == 6 else "").split(",")
                          if t.strip())  # fmt: skip
    if len(applies_to) > 200:
        raise ValidationError(
            _("Line %(line)d: at most 200 characters of question kinds.") % {"line": line}
        )
    return CriterionSpec(key, label_en, label_zh, low, high, meanings, applies_to)


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
        help_text=format_lazy(
            gettext_lazy("{criteria}. {applies}"), criteria=CRITERIA_HELP, applies=APPLIES_HELP
        ),
    )

    def __init__(self, *args: Any, owner: Any, instance: Rubric | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.owner = owner
        self.instance = instance

    def clean_key(self) -> str:
        """Keys are unique per owner: taken means by one of the owner's rubrics or a built-in
        one, never another organizer's, so the refusal tells nothing about theirs."""
        key = self.cleaned_data["key"]
        mine = Q(owner=self.owner) if self.owner is not None else Q(owner__isnull=True)
        taken = Rubric.objects.filter(mine | Q(builtin=True), key=key)
        if self.instance is not None:
            taken = taken.exclude(pk=self.instance.pk)
        if taken.exists():
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


def _page(request: HttpRequest, form: RubricForm, *, status: int = 200, **extra: Any):
    """The rubrics page: the list, then the form (new, copy or edit), and a refusal if any."""
    rubrics = list(selectors.rubric_list(request.user))
    owned = set(rubrics_owned(request.user).values_list("pk", flat=True))
    for r in rubrics:
        r.may_change = r.pk in owned  # type: ignore[attr-defined]
    context = {"form": form, "rubrics": rubrics, "editing": form.instance, **extra}
    return render(request, "annotation/organizer/rubrics.html", context, status=status)


def _copy_of(request: HttpRequest) -> dict[str, str]:
    """?copy=ID: the form filled with a rubric the organizer may read, under a free key."""
    raw = request.GET.get("copy")
    if raw is None:
        return {}
    pk = parse_id(raw)
    rubric = get_object_or_404(rubrics_visible(request.user), pk=pk) if pk else None
    if rubric is None or rubric.mode != Rubric.Mode.STAR:
        raise Http404
    return rubric_initial(rubric, key=free_copy_key(rubric, request.user))


@organizer_required
@require_http_methods(["GET", "POST"])
def rubrics(request: HttpRequest) -> HttpResponse:
    """GET: the rubrics and the form (?copy=ID fills it with a rubric to copy); POST: create a
    star rubric of the organizer's, then back to the new study."""
    form = RubricForm(request.POST or None, initial=_copy_of(request), owner=request.user)
    if request.method == "POST" and form.is_valid():
        rubric = rubric_create(form.cleaned_data, owner=request.user)
        messages.success(request, _("Rubric %(name)s saved.") % {"name": rubric.display_name})
        return redirect(reverse("organize:study_new") + f"?rubric={rubric.pk}")
    return _page(request, form, status=400 if form.is_bound else 200)


def _refused(request: HttpRequest, rubric: Rubric, message: str, status: int) -> HttpResponse:
    form = RubricForm(owner=request.user)
    return _page(request, form, status=status, refusal=message, refused=rubric)


def _changeable(request: HttpRequest, rubric_id: int) -> tuple[Rubric, HttpResponse | None]:
    """A rubric the organizer may read (another organizer's is a 404), and the refusal when it
    is not theirs to change (a built-in one, or another's that their study uses: 403) or a
    study uses it (409)."""
    rubric = get_object_or_404(rubrics_visible(request.user), pk=rubric_id)
    if not rubrics_owned(request.user).filter(pk=rubric.pk).exists():
        message = _("The rubric %(key)s is not yours to change; copy it as a new rubric.")
        return rubric, _refused(request, rubric, message % {"key": rubric.key}, 403)
    if rubric.studies.exists():
        return rubric, _refused(request, rubric, str(RubricInUse(rubric)), 409)
    return rubric, None


@organizer_required
@require_http_methods(["GET", "POST"])
def rubric_edit(request: HttpRequest, rubric_id: int) -> HttpResponse:
    """GET: the form filled with the organizer's rubric; POST: save its new name and criteria.
    Refused (409, nothing written) once a study uses it, and for pairwise rubrics (400)."""
    rubric, refusal = _changeable(request, rubric_id)
    if refusal is not None:
        return refusal
    if rubric.mode != Rubric.Mode.STAR:
        message = _("Only star rubrics are edited here; a pairwise rubric has no criteria.")
        return _refused(request, rubric, message, 400)
    form = RubricForm(
        request.POST or None, initial=rubric_initial(rubric), owner=rubric.owner, instance=rubric
    )
    if request.method == "POST" and form.is_valid():
        try:
            rubric = rubric_update(rubric, form.cleaned_data)
        except RubricInUse as e:  # a study made since the check above
            return _refused(request, rubric, str(e), 409)
        messages.success(request, _("Rubric %(name)s saved.") % {"name": rubric.display_name})
        return redirect("organize:rubrics")
    return _page(request, form, status=400 if form.is_bound else 200)


@organizer_required
@require_http_methods(["GET", "POST"])
def rubric_remove(request: HttpRequest, rubric_id: int) -> HttpResponse:
    """GET: ask to confirm; POST with confirm=delete: delete the organizer's rubric (a POST
    without it asks again, so a stray form or script deletes nothing). Refused (409, nothing
    deleted) once a study uses it."""
    rubric, refusal = _changeable(request, rubric_id)
    if refusal is not None:
        return refusal
    if request.method != "POST" or request.POST.get("confirm") != "delete":
        return render(request, "annotation/organizer/rubric_delete.html", {"rubric": rubric})
    try:
        rubric_delete(rubric)
    except RubricInUse as e:
        return _refused(request, rubric, str(e), 409)
    messages.success(request, _("Rubric %(name)s deleted.") % {"name": rubric.display_name})
    return redirect("organize:rubrics")
