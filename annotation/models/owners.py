"""When an account is deleted its datasets, studies, judges, templates, rubrics and named raters
lose their owner (`on_delete=SET_NULL`) and join the ownerless rows, whose names are unique among
themselves (`catalogue.unique_per_owner`). A row named like an ownerless one gets its id
appended first, so deleting the account never fails on a name."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.db.models import Q
from django.db.models.signals import pre_delete

# (model, name field, what makes a row's name unique among the ownerless rows)
NAMED = [
    ("annotation.Dataset", "name", Q()),
    ("annotation.Study", "name", Q()),
    ("evaluation.JudgeConfig", "name", Q()),
    ("evaluation.PromptTemplate", "key", Q()),
    ("annotation.Rubric", "key", Q()),
    ("annotation.Rater", "name", Q(user__isnull=True, external_id="") & ~Q(name="")),
]


def _renamed(value: str, pk: int, max_length: int, slug: bool) -> str:
    suffix = f"-{pk}" if slug else f" (#{pk})"
    return value[: max_length - len(suffix)] + suffix


def free_names_of_deleted_owner(sender: Any, instance: Any, **kwargs: Any) -> None:
    for label, field, named in NAMED:
        model = apps.get_model(label)
        rows = model._default_manager.filter(named)
        shared = rows.filter(owner__isnull=True).values(field)
        f = model._meta.get_field(field)
        slug = f.get_internal_type() == "SlugField"
        for row in rows.filter(owner=instance, **{f"{field}__in": shared}):
            new = _renamed(getattr(row, field), row.pk, f.max_length, slug)
            model._default_manager.filter(pk=row.pk).update(**{field: new})


pre_delete.connect(
    free_names_of_deleted_owner, sender=settings.AUTH_USER_MODEL, dispatch_uid="free_names"
)
