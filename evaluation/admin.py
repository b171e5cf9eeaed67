from __future__ import annotations

from django.contrib import admin

from evaluation.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ["key", "name", "kind", "parser", "builtin"]
    list_filter = ["kind", "builtin"]


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "model",
        "base_url",
        "api_key_env",
        "key_is_set",
        "template",
        "concurrency",
    ]
    readonly_fields = ["rater"]

    @admin.display(boolean=True, description="key set")
    def key_is_set(self, obj: JudgeConfig) -> bool:
        # Whether this server has the approved variable set; never its value.
        return obj.key_is_set


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
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


@admin.register(JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
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
