"""Admin scoping: what an organizer who is not a superuser may see and edit in the admin.

Two rules per model, both querysets so that lists, forms, bulk actions and single objects agree:

- **visible**: the rows the organizer may see (their own studies and what hangs off them, the
  datasets `annotation.permissions.datasets_visible` lists, the raters who worked on their
  studies, their judges);
- **owned**: the visible rows they may change or delete: only rows no other organizer depends on.
  A crowd rater who also rated another organizer's study is visible but read-only, because
  changing its pool would rewrite that organizer's per-pool report.

Anything outside `visible` is a 404, not the admin's "does not exist" redirect. Superusers see and
edit everything. Evaluation models reuse `evaluation.services.judges_for` / `templates_for` and
`evaluation.selectors.runs_for`.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin import widgets
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models
from django.db.models import Exists, ForeignKey, Model, OuterRef, Q, QuerySet
from django.db.models.options import Options
from django.forms import ModelChoiceField
from django.forms.fields import InvalidJSONInput
from django.http import Http404, HttpRequest, HttpResponseRedirect

from annotation import inputs, permissions
from annotation.models import Assignment, Question, Rater, Response, Rubric, Study
from annotation.permissions import datasets_owned, datasets_visible, studies_for


def raters_visible(user) -> QuerySet[Rater]:
    """Raters who worked on the user's studies, onsite raters they invited, their judges, the
    named raters of their imports."""
    qs = Rater.objects.all()
    if user.is_superuser:
        return qs
    worked = Assignment.objects.filter(study__owner=user).values("rater_id")
    return qs.filter(
        Q(pk__in=worked) | Q(invited_by=user) | Q(judge_config__owner=user) | Q(owner=user)
    )


def raters_owned(user) -> QuerySet[Rater]:
    """Visible raters that no other organizer's study, invitation or judge depends on."""
    qs = raters_visible(user)
    if user.is_superuser:
        return qs
    elsewhere = Assignment.objects.filter(rater=OuterRef("pk")).exclude(study__owner=user)
    return (
        qs.exclude(Exists(elsewhere))
        .filter(Q(invited_by__isnull=True) | Q(invited_by=user))
        .filter(Q(judge_config__isnull=True) | Q(judge_config__owner=user))
        .filter(Q(owner__isnull=True) | Q(owner=user))
    )


def rubrics_owned(user) -> QuerySet[Rubric]:
    """The organizer's own custom rubrics while no study uses them, the same rule as the rubrics
    page (ratings given on a rubric keep their meaning); superusers: every custom rubric.
    Shipped rubrics: nobody."""
    qs = permissions.rubrics_owned(user)
    if user.is_superuser:
        return qs
    return qs.exclude(Exists(Study.objects.filter(rubric=OuterRef("pk"))))


# A NUL in JSON text: the escape \u0000 after an even number of backslashes (a raw NUL is not
# JSON at all).
_JSON_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _unstorable_json(text: object) -> bool:
    """Text Django's JSON field would take, or fail on, that nothing can store: JSON nested
    deeper than the stack (a RecursionError, a 500), a lone surrogate or a NUL (no database
    text holds them); invalid JSON too, which Django's field refuses anyway."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        inputs.json_loads(text)
    except ValueError:
        return True
    return bool(_JSON_NUL.search(text))


class StrictJSONField(forms.JSONField):
    """The admin's JSON fields: what cannot be stored is invalid JSON (a field error), not a
    500 from the decoder's stack or the database."""

    def to_python(self, value: Any) -> Any:
        if _unstorable_json(value):
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        if not self.disabled and _unstorable_json(data):
            return InvalidJSONInput(data)
        return super().bound_data(data, initial)


# Every admin form (pages and inlines) reads JSON with the field above.
JSON_OVERRIDES: dict = {models.JSONField: {"form_class": StrictJSONField}}


class ScopedRawIdWidget(widgets.ForeignKeyRawIdWidget):
    """The raw-id box, naming the chosen object (its name and change link beside the box) only
    when it is in `queryset`. Django's widget looks the id up in the whole table, so an
    organizer who opened ?dataset=<id> on the question form read the name of another
    organizer's private dataset."""

    def __init__(self, rel: Any, admin_site: admin.AdminSite, queryset: QuerySet, **kwargs):
        super().__init__(rel, admin_site, **kwargs)
        self.queryset = queryset

    def label_and_url_for_value(self, value: Any) -> tuple[str, str]:
        key = self.rel.get_related_field().name
        try:
            allowed = self.queryset.filter(**{key: value}).exists()
        except (ValueError, TypeError, ValidationError):
            allowed = False
        return super().label_and_url_for_value(value) if allowed else ("", "")


class ScopedAdminMixin(admin.ModelAdmin):
    """Base for every scoped ModelAdmin: override `visible` and, where it differs, `owned`.
    A ModelAdmin itself, so that its super() calls are typed; admins list it before another
    ModelAdmin base (ReadOnlyAdmin) to put its rules first."""

    # Foreign-key form fields whose choices are limited: field name -> fn(user) -> queryset.
    fk_choices: dict = {}
    formfield_overrides = JSON_OVERRIDES

    def visible(self, request: HttpRequest, qs: QuerySet) -> QuerySet:
        return qs

    def owned(self, request: HttpRequest, qs: QuerySet) -> QuerySet:
        return qs

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        qs = super().get_queryset(request)
        return qs if request.user.is_superuser else self.visible(request, qs)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs):
        """A new row an organizer adds is theirs before it is validated, so a name is checked
        among their own rows (names are unique per owner) and never reaches the database's
        constraint as an error page."""
        form = super().get_form(request, obj, change=change, **kwargs)
        has_owner = any(f.name == "owner" for f in self.model._meta.fields)
        if obj is not None or request.user.is_superuser or not has_owner:
            return form
        user = request.user

        class OwnedForm(form):  # type: ignore[valid-type,misc]
            def _post_clean(self) -> None:
                self.instance.owner = user
                super()._post_clean()

        return OwnedForm

    def _is_owned(self, request: HttpRequest, obj: Model | None) -> bool:
        if obj is None or request.user.is_superuser:
            return True
        qs = self.model._default_manager.filter(pk=obj.pk)
        return self.owned(request, self.visible(request, qs)).exists()

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return super().has_change_permission(request, obj) and self._is_owned(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return super().has_delete_permission(request, obj) and self._is_owned(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet) -> None:
        # The "delete selected" action asks has_delete_permission without an object.
        owned = self.owned(request, queryset).values("pk")
        if not request.user.is_superuser and queryset.exclude(pk__in=owned).exists():
            raise PermissionDenied
        super().delete_queryset(request, queryset)

    def _get_obj_does_not_exist_redirect(
        self, request: HttpRequest, opts: Options, object_id: str
    ) -> HttpResponseRedirect:
        # Someone else's object answers exactly as a missing one: 404, no hint it exists.
        raise Http404

    def formfield_for_foreignkey(
        self, db_field: ForeignKey, request: HttpRequest, **kwargs: Any
    ) -> ModelChoiceField | None:
        choices = self.fk_choices.get(db_field.name)
        if choices is not None and not request.user.is_superuser:
            kwargs["queryset"] = choices(request.user)
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if (
            isinstance(field, ModelChoiceField)
            and isinstance(field.widget, widgets.ForeignKeyRawIdWidget)
            and field.queryset is not None
            and not request.user.is_superuser
        ):
            field.widget = ScopedRawIdWidget(
                db_field.remote_field,
                self.admin_site,
                self._raw_id_names(db_field, field.queryset, request),
                using=field.widget.db,
            )
        return field

    def _raw_id_names(self, db_field: ForeignKey, qs: QuerySet, request: HttpRequest) -> QuerySet:
        """The objects a raw-id box may name: those the field takes, and of a scoped model
        only those its admin lists to this organizer."""
        related = self.admin_site._registry.get(db_field.remote_field.model)
        if isinstance(related, ScopedAdminMixin):
            qs = qs.filter(pk__in=related.get_queryset(request).values("pk"))
        return qs


class StudyScoped(ScopedAdminMixin):
    """Rows that belong to a study, found through `study_path`."""

    study_path = "study"

    def visible(self, request: HttpRequest, qs: QuerySet) -> QuerySet:
        return qs.filter(**{f"{self.study_path}__in": studies_for(request.user)})


class DatasetScoped(ScopedAdminMixin):
    """Rows that belong to a dataset through `dataset_path`: seen with the dataset, edited only
    in the organizer's own datasets."""

    dataset_path = "dataset"

    def visible(self, request: HttpRequest, qs: QuerySet) -> QuerySet:
        return qs.filter(**{f"{self.dataset_path}__in": datasets_visible(request.user)})

    def owned(self, request: HttpRequest, qs: QuerySet) -> QuerySet:
        return qs.filter(**{f"{self.dataset_path}__in": datasets_owned(request.user)})


class RubricScoped(ScopedAdminMixin):
    """Rubrics (`rubric_path` "pk") and their criteria: seen as the rubrics page lists them
    (annotation.permissions.rubrics_visible), changed only while owned (`rubrics_owned`)."""

    rubric_path = "pk"

    def visible(self, request: HttpRequest, qs: QuerySet) -> QuerySet:
        return qs.filter(**{f"{self.rubric_path}__in": permissions.rubrics_visible(request.user)})

    def owned(self, request: HttpRequest, qs: QuerySet) -> QuerySet:
        return qs.filter(**{f"{self.rubric_path}__in": rubrics_owned(request.user)})


def own_questions(user) -> QuerySet[Question]:
    return Question.objects.filter(dataset__in=datasets_owned(user))


def llms_owned_filter(user) -> Q:
    """LLMs whose every response lies in the user's own datasets (renaming one changes every
    report that names it)."""
    foreign = Response.objects.filter(llm=OuterRef("pk")).exclude(
        question__dataset__in=datasets_owned(user)
    )
    return ~Q(Exists(foreign))


def llms_visible_filter(user) -> Q:
    seen = Response.objects.filter(llm=OuterRef("pk"), question__dataset__in=datasets_visible(user))
    unused = Response.objects.filter(llm=OuterRef("pk"))
    return Q(Exists(seen)) | ~Q(Exists(unused))


def own_study_filter(path: str):
    """A study filter listing only the studies the user may see (a plain list_filter would show
    every study's name to every organizer)."""

    class OwnStudyFilter(admin.SimpleListFilter):
        title = "study"
        parameter_name = "study_id"

        def lookups(self, request, model_admin):
            return [(s.pk, s.name) for s in studies_for(request.user).order_by("name")]

        def queryset(self, request, queryset):
            if self.value():
                return queryset.filter(**{f"{path}__pk": self.value()})
            return queryset

    return OwnStudyFilter
