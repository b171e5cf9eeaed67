"""Django admin for every annotation model, usable by an organizer.

Results are read-only here: ratings, scores, assignments and items (editing them would corrupt
the statistics), responses once a study has ratings on them, the shipped rubrics and the import
records. Organizers who are not superusers see and edit only their own objects: the scoping rules
(querysets, foreign-key choices, change and delete rights) are in annotation/admin_scope.py. Data comes in through "Import data" on the datasets page
(the same importers as `manage.py import_dataset` and the API).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import render
from django.urls import NoReverseMatch, path, reverse
from django.utils.html import format_html

from annotation.admin_forms import ImportForm
from annotation.admin_scope import (
    JSON_OVERRIDES,
    DatasetScoped,
    RubricScoped,
    ScopedAdminMixin,
    StudyScoped,
    llms_owned_filter,
    llms_visible_filter,
    own_questions,
    own_study_filter,
    raters_owned,
    raters_visible,
    rubrics_owned,
)
from annotation.importers import FORMATS, ImportRefused
from annotation.models import (
    LLM,
    Assignment,
    Criterion,
    Dataset,
    Exclusion,
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
from annotation.permissions import datasets_owned, datasets_visible, is_organizer
from annotation.services import uploads_import

RelatedOnly = admin.RelatedOnlyFieldListFilter


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only: results are never edited by hand."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


# --- data -------------------------------------------------------------------------------------


@admin.register(Dataset)
class DatasetAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = ["name", "source", "owner", "question_count", "created_at"]
    search_fields = ["name", "description", "source"]
    list_filter = ["created_at"]
    list_select_related = ["owner"]
    raw_id_fields = ["owner"]
    change_list_template = "admin/annotation/dataset/change_list.html"

    @admin.display(description="questions")
    def question_count(self, obj: Dataset) -> int:
        return obj.questions.count()

    def visible(self, request, qs):
        return qs.filter(pk__in=datasets_visible(request.user).values("pk"))

    def owned(self, request, qs):
        return qs.filter(pk__in=datasets_owned(request.user).values("pk"))

    def get_readonly_fields(self, request, obj=None):
        return [] if request.user.is_superuser else ["owner"]

    def save_model(self, request, obj, form, change):
        if not change and not request.user.is_superuser:
            obj.owner = request.user
        super().save_model(request, obj, form, change)

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
        form = ImportForm(request.POST or None, request.FILES or None, user=request.user)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                result = uploads_import(
                    format=data["format"],
                    files=data["files"],
                    folder=data["folder"],
                    user=request.user,
                    dry_run=data["dry_run"],
                    options=form.options(),
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
class QuestionAdmin(DatasetScoped, admin.ModelAdmin):
    list_display = ["external_id", "dataset", "task_type", "kind", "answer_type", "short_text"]
    list_filter = [
        ("dataset", admin.RelatedOnlyFieldListFilter),
        "kind",
        "answer_type",
        "task_type",
    ]
    fk_choices = {"dataset": datasets_owned}
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
class LLMAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = ["name", "description"]
    search_fields = ["name", "description"]

    def visible(self, request, qs):
        return qs.filter(llms_visible_filter(request.user))

    def owned(self, request, qs):
        return qs.filter(llms_owned_filter(request.user))

    # LLM names are unique server-wide, so a refused name would tell an organizer that another
    # organizer's private data has a model of that name: organizers neither add nor rename LLMs
    # here (imports name them; the dataset's LLM page merges near-duplicates).
    def has_add_permission(self, request) -> bool:
        return request.user.is_superuser and super().has_add_permission(request)

    def get_readonly_fields(self, request, obj=None):
        return [] if request.user.is_superuser else ["name"]


@admin.register(Response)
class ResponseAdmin(DatasetScoped, admin.ModelAdmin):
    dataset_path = "question__dataset"
    fk_choices = {"question": own_questions}
    list_display = ["id", "llm", "question", "external_id", "length"]
    list_filter = [("llm", admin.RelatedOnlyFieldListFilter), "question__task_type"]
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
    formfield_overrides = JSON_OVERRIDES
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
class RubricAdmin(RubricScoped, admin.ModelAdmin):
    list_display = ["key", "name_en", "name_zh", "mode", "builtin"]
    list_filter = ["mode", "builtin"]
    search_fields = ["key", "name_en", "name_zh"]
    inlines = [CriterionInline]
    raw_id_fields = ["owner"]

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.builtin:
            return ["key", "name_en", "name_zh", "mode", "description", "builtin", "owner"]
        return ["builtin"] if request.user.is_superuser else ["builtin", "owner"]

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and (obj.builtin or obj.studies.exists()):
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Criterion)
class CriterionAdmin(RubricScoped, admin.ModelAdmin):
    rubric_path = "rubric"
    list_display = ["rubric", "key", "label_en", "label_zh", "min_score", "max_score", "applies_to"]
    list_filter = [("rubric", admin.RelatedOnlyFieldListFilter)]  # never another's rubric
    search_fields = ["key", "label_en", "label_zh"]
    list_select_related = ["rubric"]
    fk_choices = {"rubric": rubrics_owned}

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
class StudyAdmin(StudyScoped, admin.ModelAdmin):
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
    list_filter = [
        "status",
        "mode",
        ("rubric", admin.RelatedOnlyFieldListFilter),
        ("dataset", admin.RelatedOnlyFieldListFilter),
    ]
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

    def add_view(self, request, form_url="", extra_context=None):
        # Studies are created with their items by annotation.services.study_create: the
        # organizer pages (and the API) do that; the admin sends organizers there.
        try:
            return HttpResponseRedirect(reverse("organize:study_new"))
        except NoReverseMatch:
            messages.info(request, "Create studies through the API (POST /api/studies/).")
            return HttpResponseRedirect(reverse("admin:annotation_study_changelist"))


@admin.register(Item)
class ItemAdmin(StudyScoped, ReadOnlyAdmin):
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
class RaterAdmin(ScopedAdminMixin, admin.ModelAdmin):
    # Organizers identify raters by pseudonym; the account and worker id stay on the detail page.
    list_display = ["pseudonym", "name", "kind", "pool", "platform", "created_at"]
    list_filter = ["kind", "pool", "platform"]
    search_fields = ["pseudonym", "name", "nickname"]
    readonly_fields = ["pseudonym", "created_at"]
    raw_id_fields = ["user", "invited_by"]

    def get_exclude(self, request, obj=None):
        # Accounts and worker ids stay with superusers; organizers work with pseudonyms.
        return (
            []
            if request.user.is_superuser
            else ["user", "external_id", "platform", "invited_by", "owner"]
        )

    def visible(self, request, qs):
        return qs.filter(pk__in=raters_visible(request.user).values("pk"))

    def owned(self, request, qs):
        return qs.filter(pk__in=raters_owned(request.user).values("pk"))

    def save_model(self, request, obj, form, change):
        # A rater an organizer adds is theirs (and so stays visible to them).
        if not change and not request.user.is_superuser:
            obj.invited_by = request.user
        super().save_model(request, obj, form, change)

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.ratings.exists():
            return False
        return super().has_delete_permission(request, obj)


@admin.register(Assignment)
class AssignmentAdmin(StudyScoped, ReadOnlyAdmin):
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
class RatingAdmin(StudyScoped, ReadOnlyAdmin):
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
class ScoreAdmin(StudyScoped, ReadOnlyAdmin):
    study_path = "rating__item__study"
    list_display = ["id", "rating_id", "criterion", "value"]
    # Only the rubrics and criteria of the listed scores (a plain filter lists every one).
    list_filter = [("criterion__rubric", RelatedOnly), ("criterion", RelatedOnly), "value"]
    search_fields = ["=rating__id"]
    list_select_related = ["criterion__rubric"]
    raw_id_fields = ["rating", "criterion"]


@admin.register(ImportRecord)
class ImportRecordAdmin(ScopedAdminMixin, ReadOnlyAdmin):
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
    list_filter = ["ok", "format", ("dataset", admin.RelatedOnlyFieldListFilter)]
    search_fields = ["message", "paths"]
    list_select_related = ["dataset", "user"]
    date_hierarchy = "created_at"

    def visible(self, request, qs):
        return qs.filter(user=request.user)

    @admin.display(description="added")
    def added(self, obj: ImportRecord) -> int:
        return sum((obj.counts or {}).get("added", {}).values())

    @admin.display(description="repairs")
    def repair_count(self, obj: ImportRecord) -> int:
        return len(obj.repairs or [])

    @admin.display(description="files")
    def files(self, obj: ImportRecord) -> str:
        return format_html("{}", ", ".join(obj.paths or [])[:120])


@admin.register(Exclusion)
class ExclusionAdmin(StudyScoped, ReadOnlyAdmin):
    # Exclusions are made and lifted on the study's annotator-quality page, with a reason.
    list_display = ["study", "rater", "reason", "created_by", "created_at"]
    list_filter = ["study"]
