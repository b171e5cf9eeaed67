from __future__ import annotations

from django.apps import AppConfig


class RankingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "ranking"
    verbose_name = "Statistics and rankings"
