from __future__ import annotations

# The module, not the class: Django takes the one AppConfig class it finds here as the app's.
from config import apps


class AnnotationConfig(apps.BuiltinsAppConfig):
    name = "annotation"
    verbose_name = "Annotation"
    builtins_installer = "annotation.rubrics.ensure_builtin_rubrics"
