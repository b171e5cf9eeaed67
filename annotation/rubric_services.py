"""An organizer's own star rubrics: create, edit while no study uses them, delete while no study
uses them. The rubrics page (annotation/views/organizer/rubrics.py) calls these; the API reads
rubrics only. Ratings given on a rubric keep their meaning: once a study uses it its name and
criteria stay as they are (copy it as a new rubric instead), and it cannot be deleted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import ProtectedError
from django.utils.translation import gettext as _

from annotation.models import Criterion, Rubric


@dataclass
class CriterionSpec:
    key: str
    label_en: str
    label_zh: str
    min_score: int
    max_score: int
    descriptions: list[dict[str, str]]
    applies_to: str = ""


class RubricInUse(Exception):
    """The rubric is used by a study: it is neither changed nor deleted."""

    def __init__(self, rubric: Rubric) -> None:
        self.rubric = rubric
        super().__init__(
            _(
                "A study uses the rubric %(key)s, so it is kept as it is: ratings given on it "
                "must keep their meaning. Copy it as a new rubric to change it."
            )
            % {"key": rubric.key}
        )


def rubric_held(rubric: Rubric) -> bool:
    """Keep `rubric` from being deleted until the transaction ends; False when it is gone. A
    study made with it calls this first: its foreign key is checked only at commit, so a delete
    committed meanwhile would fail the commit (a 500). On PostgreSQL this takes now the row lock
    that check takes (FOR KEY SHARE: studies made side by side do not wait for one another; a
    delete or edit in progress is waited for)."""
    if connection.vendor != "postgresql":
        return Rubric.objects.filter(pk=rubric.pk).exists()
    with connection.cursor() as cursor:
        table = connection.ops.quote_name(Rubric._meta.db_table)
        cursor.execute(f"SELECT 1 FROM {table} WHERE id = %s FOR KEY SHARE", [rubric.pk])
        return cursor.fetchone() is not None


def _criteria(rubric: Rubric, specs: list[CriterionSpec]) -> None:
    Criterion.objects.bulk_create(
        Criterion(rubric=rubric, order=i, **vars(spec)) for i, spec in enumerate(specs)
    )


@transaction.atomic
def rubric_create(data: dict[str, Any], *, owner: Any) -> Rubric:
    """A new star rubric of `owner` from the rubrics form's cleaned data."""
    rubric = Rubric.objects.create(
        key=data["key"],
        name_en=data["name_en"],
        name_zh=data["name_zh"],
        description=data["description"],
        mode=Rubric.Mode.STAR,
        owner=owner,
    )
    _criteria(rubric, data["criteria"])
    return rubric


def _locked_unused(rubric: Rubric) -> Rubric:
    """The rubric's row, locked until the transaction ends; RubricInUse when a study uses it.
    On PostgreSQL a study being made with it holds it (rubric_held): this waits for that study,
    then refuses; a study begun after this lock waits for it, then sees the new criteria."""
    locked = Rubric.objects.select_for_update().get(pk=rubric.pk)
    if locked.studies.exists():
        raise RubricInUse(locked)
    return locked


@transaction.atomic
def rubric_update(rubric: Rubric, data: dict[str, Any]) -> Rubric:
    """Rename a rubric and replace its criteria, when no study uses it (else RubricInUse and
    nothing written)."""
    locked = _locked_unused(rubric)
    for field in ("key", "name_en", "name_zh", "description"):
        setattr(locked, field, data[field])
    locked.save(update_fields=["key", "name_en", "name_zh", "description"])
    locked.criteria.all().delete()
    _criteria(locked, data["criteria"])
    return locked


@transaction.atomic
def rubric_delete(rubric: Rubric) -> None:
    """Delete a rubric no study uses (else RubricInUse and nothing deleted)."""
    locked = _locked_unused(rubric)
    try:
        with transaction.atomic():
            locked.delete()
    except ProtectedError:  # a study made between the check and the delete (SQLite)
        raise RubricInUse(locked) from None


def _meaning(d: dict[str, str]) -> str:
    en, zh = str(d.get("en", "")), str(d.get("zh", ""))
    return en if not zh or zh == en else f"{en} / {zh}"


def criteria_lines(rubric: Rubric) -> str:
    """A rubric's criteria written as the rubrics form reads them (one a line), to edit or copy."""
    lines = []
    for c in rubric.criteria.all():
        cells = [c.key, c.label_en, c.label_zh, f"{c.min_score}-{c.max_score}"]
        meanings = "; ".join(_meaning(d) for d in c.descriptions if isinstance(d, dict))
        cells += [meanings, c.applies_to] if c.applies_to else [meanings] if meanings else []
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def rubric_initial(rubric: Rubric, *, key: str | None = None) -> dict[str, str]:
    """The rubrics form's initial data for editing `rubric` (or copying it, under `key`)."""
    return {
        "key": key or rubric.key,
        "name_en": rubric.name_en,
        "name_zh": rubric.name_zh,
        "description": rubric.description,
        "criteria": criteria_lines(rubric),
    }


def free_copy_key(rubric: Rubric, owner: Any) -> str:
    """A key for a copy of `rubric` that `owner` has not used (nor a built-in rubric)."""
    taken = set(Rubric.objects.filter(owner=owner).values_list("key", flat=True)) | set(
        Rubric.objects.filter(builtin=True).values_list("key", flat=True)
    )
    base = f"{rubric.key[:70]}-copy"
    for n in range(1, 100):
        key = base if n == 1 else f"{base}-{n}"
        if key not in taken:
            return key
    return base
