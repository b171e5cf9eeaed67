from __future__ import annotations

# The module, not the class: Django takes the one AppConfig class it finds here as the app's.
from config import apps


class EvaluationConfig(apps.BuiltinsAppConfig):
    name = "evaluation"
    verbose_name = "LLM judges"
    builtins_installer = "evaluation.prompts.ensure_builtin_templates"
