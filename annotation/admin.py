"""Django admin for every annotation model, usable by an organizer.

Results are read-only here: ratings, scores, assignments and items (editing them would corrupt
the statistics), responses once a study has ratings on them, the shipped rubrics and the import
records. Organizers who are not superusers see only the studies they own, and only those
studies' items, assignments and ratings. Data comes in through "Import data" on the datasets page
(the same importers as `manage.py import_dataset` and the API).
"""

from __future__ import annotations

import tempfile

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import render
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html

from annotation.importers import FORMATS, ImportRefused, dataset_import, save_uploads
from annotation.models import (
    LLM,
    Assignment,
    Criterion,
    Dataset,
    ImportRecord,
    Item,
    Question,
    Rater,
    Rating,
    Response,
    Rubric,
    Score,
    Study,
)
from annotation.permissions import is_organizer, studies_for


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only: results are never edited by hand."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class OwnedStudyMixin:
    """Limit rows to studies the user may see (superusers: all)."""

    study_path = "study"

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        return qs.filter(**{f"{self.study_path}__in": studies_for(request.user)})


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


# --- data -------------------------------------------------------------------------------------


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


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "source", "owner", "question_count", "created_at"]
    search_fields = ["name", "description", "source"]
    list_filter = ["created_at"]
    list_select_related = ["owner"]
    raw_id_fields = ["owner"]
    change_list_template = "admin/annotation/dataset/change_list.html"

    @admin.display(description="questions")
    def question_count(self, obj: Dataset) -> int:
        return obj.questions.count()

    def get_urls(self):
        return [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="annotation_dataset_import",
            ),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest):
        if not is_organizer(request.user):
            raise PermissionDenied
        result = None
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            with tempfile.TemporaryDirectory(prefix="import-") as tmp:
                paths = save_uploads(data["files"], data["folder"], tmp)
                try:
                    result = dataset_import(
                        format=data["format"],
                        paths=paths,
                        user=request.user,
                        dry_run=data["dry_run"],
                        progress=False,
                        dataset=data["dataset"] or None,
                        study=data["study"] or None,
                        rater=data["rater"] or None,
                        rater_kind=data["rater_kind"] or None,
                        rubric=data["rubric"] or None,
                    )
                except ImportRefused as exc:
                    messages.error(request, f"Refused, nothing was written: {exc}")
                else:
                    level = messages.INFO if result.dry_run else messages.SUCCESS
                    messages.add_message(
                        request, level, f"Import done: {result.total_added} rows added."
                    )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Import data",
            "form": form,
            "result": result,
            "formats": FORMATS.values(),
        }
        return render(request, "admin/annotation/dataset/import.html", context)


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    list_display = ["external_id", "dataset", "task_type", "kind", "answer_type", "short_text"]
    list_filter = ["dataset", "kind", "answer_type", "task_type"]
    search_fields = ["external_id", "text", "reference"]
    list_select_related = ["dataset"]
    raw_id_fields = ["dataset"]

    @admin.display(description="text")
    def short_text(self, obj: Question) -> str:
        return obj.text[:80]

    def _has_ratings(self, obj) -> bool:
        return obj is not None and Rating.objects.filter(item__question=obj).exists()

    def get_readonly_fields(self, request, obj=None):
        if self._has_ratings(obj):
            return [f.name for f in Question._meta.fields]
        return []

    def has_delete_permission(self, request, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and not self._has_ratings(obj)


@admin.register(LLM)
class LLMAdmin(admin.ModelAdmin):
    list_display = ["name", "description"]
    search_fields = ["name", "description"]


@admin.register(Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ["id", "llm", "question", "external_id", "length"]
    list_filter = ["llm", "question__dataset", "question__task_type"]
    search_fields = ["external_id", "text", "question__external_id", "llm__name"]
    list_select_related = ["llm", "question"]
    raw_id_fields = ["question"]
    autocomplete_fields = ["llm"]
    readonly_fields = ["length"]

    def _rated(self, obj) -> bool:
        if obj is None:
            return False
        return Rating.objects.filter(Q(item__response_a=obj) | Q(item__response_b=obj)).exists()

    def get_readonly_fields(self, request, obj=None):
        if self._rated(obj):
            return ["question", "llm", "external_id", "text", "length"]
        return self.readonly_fields

    def has_delete_permission(self, request, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and not self._rated(obj)


# --- rubrics ----------------------------------------------------------------------------------


class CriterionInline(admin.TabularInline):
    model = Criterion
    extra = 0
    fields = [
        "order",
        "key",
        "label_en",
        "label_zh",
        "min_score",
        "max_score",
        "applies_to",
        "descriptions",
    ]

    def _builtin(self, obj) -> bool:
        return bool(obj and obj.builtin)

    def has_add_permission(self, request, obj=None) -> bool:
        return not self._builtin(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None) -> bool:
        return not self._builtin(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        return not self._builtin(obj) and super().has_delete_permission(request, obj)


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ["key", "name_en", "name_zh", "mode", "builtin"]
    list_filter = ["mode", "builtin"]
    search_fields = ["key", "name_en", "name_zh"]
    inlines = [CriterionInline]

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.builtin:
            return ["key", "name_en", "name_zh", "mode", "description", "builtin"]
        return ["builtin"]

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and (obj.builtin or obj.studies.exists()):
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Criterion)
class CriterionAdmin(admin.ModelAdmin):
    list_display = ["rubric", "key", "label_en", "label_zh", "min_score", "max_score", "applies_to"]
    list_filter = ["rubric"]
    search_fields = ["key", "label_en", "label_zh"]
    list_select_related = ["rubric"]

    def has_change_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.rubric.builtin:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.rubric.builtin:
            return False
        return super().has_delete_permission(request, obj)


# --- studies ----------------------------------------------------------------------------------


@admin.register(Study)
class StudyAdmin(OwnedStudyMixin, admin.ModelAdmin):
    study_path = "pk"
    list_display = [
        "name",
        "mode",
        "status",
        "dataset",
        "rubric",
        "owner",
        "item_count",
        "created_at",
    ]
    list_filter = ["status", "mode", "rubric", "dataset"]
    search_fields = ["name", "description", "public_id"]
    list_select_related = ["dataset", "rubric", "owner"]
    raw_id_fields = ["owner", "dataset"]
    autocomplete_fields = ["baseline_llm"]
    # What items were built from, and who owns it, cannot change after creation.
    readonly_fields = [
        "public_id",
        "dataset",
        "mode",
        "rubric",
        "pair_design",
        "baseline_llm",
        "pairs_per_question",
        "selection",
        "owner",
        "created_at",
    ]

    @admin.display(description="items")
    def item_count(self, obj: Study) -> int:
        return obj.items.count()

    def get_queryset(self, request):
        qs = admin.ModelAdmin.get_queryset(self, request)
        return qs if request.user.is_superuser else qs.filter(owner=request.user)

    def add_view(self, request, form_url="", extra_context=None):
        # Studies are created with their items by annotation.services.study_create: the
        # organizer pages (and the API) do that; the admin sends organizers there.
        try:
            return HttpResponseRedirect(reverse("organize:study_new"))
        except NoReverseMatch:
            messages.info(request, "Create studies through the API (POST /api/studies/).")
            return HttpResponseRedirect(reverse("admin:annotation_study_changelist"))


@admin.register(Item)
class ItemAdmin(OwnedStudyMixin, ReadOnlyAdmin):
    list_display = [
        "id",
        "study",
        "question",
        "response_a",
        "response_b",
        "n_ratings",
        "n_reserved",
    ]
    list_filter = [own_study_filter("study")]
    search_fields = ["question__external_id", "=id"]
    list_select_related = ["study", "question", "response_a__llm", "response_b__llm"]
    raw_id_fields = ["study", "question", "response_a", "response_b"]


@admin.register(Rater)
class RaterAdmin(admin.ModelAdmin):
    # Organizers identify raters by pseudonym; the account and worker id stay on the detail page.
    list_display = ["pseudonym", "name", "kind", "pool", "platform", "created_at"]
    list_filter = ["kind", "pool", "platform"]
    search_fields = ["pseudonym", "name", "nickname"]
    readonly_fields = ["pseudonym", "created_at"]
    raw_id_fields = ["user", "invited_by"]

    def get_exclude(self, request, obj=None):
        # Accounts and worker ids stay with superusers; organizers work with pseudonyms.
        return [] if request.user.is_superuser else ["user", "external_id", "platform"]

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.ratings.exists():
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Assignment)
class AssignmentAdmin(OwnedStudyMixin, ReadOnlyAdmin):
    list_display = [
        "public_id",
        "study",
        "item_id",
        "rater",
        "status",
        "left_is_a",
        "hint_shown",
        "is_repeat",
        "served_at",
        "submitted_at",
    ]
    list_filter = ["status", "is_repeat", "hint_shown", "left_is_a", own_study_filter("study")]
    search_fields = ["=public_id", "rater__pseudonym"]
    list_select_related = ["study", "rater"]
    raw_id_fields = ["study", "item", "rater", "repeat_of"]
    date_hierarchy = "served_at"


class ScoreInline(admin.TabularInline):
    model = Score
    extra = 0
    fields = ["criterion", "value"]
    readonly_fields = ["criterion", "value"]
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Rating)
class RatingAdmin(OwnedStudyMixin, ReadOnlyAdmin):
    study_path = "item__study"
    list_display = ["id", "study_name", "item_id", "rater", "choice", "scores_text", "created_at"]
    list_filter = [own_study_filter("item__study"), "rater__kind", "rater__pool", "choice"]
    search_fields = ["rater__pseudonym", "item__question__external_id", "comment"]
    list_select_related = ["item__study", "rater"]
    raw_id_fields = ["assignment", "item", "rater"]
    inlines = [ScoreInline]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("scores__criterion")

    @admin.display(description="study", ordering="item__study__name")
    def study_name(self, obj: Rating) -> str:
        return obj.item.study.name

    @admin.display(description="scores")
    def scores_text(self, obj: Rating) -> str:
        return ", ".join(f"{k}={v}" for k, v in obj.scores_dict().items())


@admin.register(Score)
class ScoreAdmin(OwnedStudyMixin, ReadOnlyAdmin):
    study_path = "rating__item__study"
    list_display = ["id", "rating_id", "criterion", "value"]
    list_filter = ["criterion__rubric", "criterion__key", "value"]
    search_fields = ["=rating__id"]
    list_select_related = ["criterion__rubric"]
    raw_id_fields = ["rating", "criterion"]


@admin.register(ImportRecord)
class ImportRecordAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "format",
        "ok",
        "dataset",
        "user",
        "added",
        "repair_count",
        "files",
    ]
    list_filter = ["ok", "format", "dataset"]
    search_fields = ["message", "paths"]
    list_select_related = ["dataset", "user"]
    date_hierarchy = "created_at"

    @admin.display(description="added")
    def added(self, obj: ImportRecord) -> int:
        return sum((obj.counts or {}).get("added", {}).values())

    @admin.display(description="repairs")
    def repair_count(self, obj: ImportRecord) -> int:
        return len(obj.repairs or [])

    @admin.display(description="files")
    def files(self, obj: ImportRecord) -> str:
        return format_html("{}", ", ".join(obj.paths or [])[:120])
