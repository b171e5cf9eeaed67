"""What the project's app configurations share."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.module_loading import import_string


def _install_builtins(sender: BuiltinsAppConfig, **kwargs) -> None:
    import_string(sender.builtins_installer)()


class BuiltinsAppConfig(AppConfig):
    """An app that ships rows every database must hold (rubrics, prompt templates): after each
    migrate, the test databases' included, it calls `builtins_installer` (a dotted path, imported
    only then, so the app registry is ready)."""

    default_auto_field = "django.db.models.BigAutoField"
    builtins_installer = ""

    def ready(self) -> None:
        post_migrate.connect(_install_builtins, sender=self)
