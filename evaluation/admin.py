"""Admin for judges, templates, runs and calls, scoped like the annotation admin: an organizer who
is not a superuser sees their own judges and templates (plus the built-in templates, read-only)
and the runs and calls of their own studies (annotation/admin_scope.py)."""

from __future__ import annotations

from django.contrib import admin

from annotation.admin_scope import ScopedAdminMixin
from evaluation.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate
from evaluation.selectors import runs_for
from evaluation.services import judges_for, templates_for


@admin.register(PromptTemplate)
class PromptTemplateAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = ["key", "name", "kind", "parser", "builtin"]
    list_filter = ["kind", "builtin"]

    def visible(self, request, qs):
        return qs.filter(pk__in=templates_for(request.user).values("pk"))

    def owned(self, request, qs):
        return qs.filter(builtin=False, owner=request.user)

    def get_readonly_fields(self, request, obj=None):
        return ["builtin"] if request.user.is_superuser else ["builtin", "owner"]

    def save_model(self, request, obj, form, change):
        if not change and not request.user.is_superuser:
            obj.owner = request.user
        super().save_model(request, obj, form, change)


@admin.register(JudgeConfig)
class JudgeConfigAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "model",
        "base_url",
        "api_key_env",
        "key_is_set",
        "template",
        "concurrency",
        "rpm_limit",
        "tpm_limit",
    ]
    fk_choices = {"template": templates_for}

    def visible(self, request, qs):
        return qs.filter(pk__in=judges_for(request.user).values("pk"))

    def get_readonly_fields(self, request, obj=None):
        return ["rater"] if request.user.is_superuser else ["rater", "owner"]

    def has_add_permission(self, request) -> bool:
        # A judge is created with its rater by evaluation.services.judge_config_create (the
        # judges page and the API); a bare admin form would have no rater.
        return False

    @admin.display(boolean=True, description="key set")
    def key_is_set(self, obj: JudgeConfig) -> bool:
        # Whether this server has the approved variable set; never its value.
        return obj.key_is_set


@admin.register(JudgeRun)
class JudgeRunAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "study",
        "judge",
        "status",
        "n_done",
        "n_planned",
        "n_parse_failed",
        "n_call_failed",
        "cost",
        "cost_estimate",
        "budget",
    ]
    list_filter = ["status"]
    readonly_fields = [f.name for f in JudgeRun._meta.fields]

    def has_add_permission(self, request, obj=None) -> bool:
        # A run is started from the study's judge page, the API or the command (pre-flight,
        # cost estimate, plan); an empty row added here was a NOT NULL error.
        return False

    def visible(self, request, qs):
        return qs.filter(pk__in=runs_for(request.user).values("pk"))


@admin.register(JudgeCall)
class JudgeCallAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "run",
        "item",
        "purpose",
        "status",
        "parse_status",
        "tokens_in",
        "tokens_out",
        "cost",
        "cached",
    ]
    list_filter = ["purpose", "status", "parse_status", "cached"]
    readonly_fields = [f.name for f in JudgeCall._meta.fields]

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # calls are the runner's record of what it paid for

    def visible(self, request, qs):
        return qs.filter(run__in=runs_for(request.user))
