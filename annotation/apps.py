from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _install_builtin_rubrics(sender, **kwargs) -> None:
    from annotation.rubrics import ensure_builtin_rubrics

    ensure_builtin_rubrics()


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        # Shipped rubrics exist in every database, the test databases included.
        post_migrate.connect(_install_builtin_rubrics, sender=self)
