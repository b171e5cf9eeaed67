from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _install_builtin_templates(sender, **kwargs) -> None:
    from evaluation.prompts import ensure_builtin_templates

    ensure_builtin_templates()


class EvaluationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "evaluation"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        # The shipped prompt templates exist in every database, test databases included.
        post_migrate.connect(_install_builtin_templates, sender=self)
