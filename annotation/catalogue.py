"""What a dataset holds, for the study pickers: its task types and LLMs with counts, near-duplicate
names (GPT4 / GPT4.0 / gpt-4), the check that a study's selection names only what is there, and
``llm_merge``, the one workflow that folds a near-duplicate LLM into another."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count
from django.utils.translation import gettext as _

from annotation.models import LLM, Dataset, Question, Response, Study

# "4.0" and "4" name the same version; "3.5" does not become "35" before this runs.
_ZERO_MINOR = re.compile(r"(\d)\.0+(?!\d)")
_NOT_ALNUM = re.compile(r"[\W_]+", re.UNICODE)


def normalised_name(name: str) -> str:
    """The key two names share when they are near-duplicates: Unicode-folded (full-width
    letters, case), a trailing ``.0`` version dropped, spaces and punctuation removed."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return _NOT_ALNUM.sub("", _ZERO_MINOR.sub(r"\1", folded))


@dataclass(frozen=True)
class Choice:
    value: str
    count: int  # questions (task types) or responses (LLMs) in the dataset
    duplicate_of: tuple[str, ...] = ()  # other names with the same normalised key


def _with_duplicates(rows: list[tuple[str, int]]) -> list[Choice]:
    groups: dict[str, list[str]] = {}
    for value, _n in rows:
        groups.setdefault(normalised_name(value), []).append(value)
    return [
        Choice(
            value=value,
            count=n,
            duplicate_of=tuple(v for v in groups[normalised_name(value)] if v != value),
        )
        for value, n in rows
    ]


def dataset_task_types(dataset: Dataset) -> list[Choice]:
    rows = (
        Question.objects.filter(dataset=dataset)
        .exclude(task_type="")
        .values_list("task_type")
        .annotate(n=Count("id"))
        .order_by("task_type")
    )
    return _with_duplicates([(t, n) for t, n in rows])


def dataset_llms(dataset: Dataset) -> list[Choice]:
    rows = (
        Response.objects.filter(question__dataset=dataset)
        .values_list("llm__name")
        .annotate(n=Count("id"))
        .order_by("llm__name")
    )
    return _with_duplicates([(name, n) for name, n in rows])


def duplicate_groups(choices: list[Choice]) -> list[list[Choice]]:
    """Groups of two or more near-duplicate names, each group in name order."""
    by_key: dict[str, list[Choice]] = {}
    for c in choices:
        by_key.setdefault(normalised_name(c.value), []).append(c)
    return [g for g in by_key.values() if len(g) > 1]


def _unknown(given: list[str], known: list[str], what: str, dataset: Dataset) -> str | None:
    missing = [v for v in given if v not in known]
    if not missing:
        return None
    shown = ", ".join(known[:30]) + (" …" if len(known) > 30 else "")
    return (
        f"{', '.join(repr(v) for v in missing)}: not {what} of dataset {dataset.name!r} "
        f"(it has: {shown or 'none'})."
    )


def selection_check(
    *, dataset: Dataset, selection: dict[str, Any], baseline_llm: LLM | None, mode: str
) -> None:
    """Refuse a selection naming task types, kinds or LLMs the dataset does not have; each
    message names the bad value and lists what the dataset has."""
    errors: dict[str, str] = {}
    task_types = [c.value for c in dataset_task_types(dataset)]
    llms = [c.value for c in dataset_llms(dataset)]
    if msg := _unknown(list(selection.get("task_types") or []), task_types, "a task type", dataset):
        errors["task_types"] = msg
    if msg := _unknown(list(selection.get("llms") or []), llms, "an LLM", dataset):
        errors["llms"] = msg
    kinds = [k for k in Question.Kind.values if k]
    if msg := _unknown(list(selection.get("kinds") or []), kinds, "a question kind", dataset):
        errors["kinds"] = msg
    if baseline_llm is not None and mode == "pairwise":
        chosen = selection.get("llms") or llms
        if baseline_llm.name not in chosen:
            errors["baseline_llm"] = (
                f"Baseline {baseline_llm.name!r} has no answers among the chosen LLMs of "
                f"dataset {dataset.name!r}."
            )
    if errors:
        raise ValidationError(errors)


def can_edit_dataset(user, dataset: Dataset) -> bool:
    """Changing a dataset's data (merging its LLMs) is for its owner; superusers may do all."""
    return bool(user.is_superuser or (dataset.owner_id and dataset.owner_id == user.id))


@transaction.atomic
def llm_merge(*, dataset: Dataset, source: LLM, target: LLM, user) -> int:
    """Move the dataset's answers by ``source`` to ``target`` (near-duplicate names of one model).

    Refused, writing nothing, when the user does not own the dataset, when source and target are
    the same, or when both have answered one question (the merge would make two answers of one
    model to the same question). Other datasets' answers keep their LLM; ``source`` is deleted
    once nothing refers to it. Returns the number of answers moved."""
    if not can_edit_dataset(user, dataset):
        raise PermissionDenied(_("Only the dataset's owner may merge its LLMs."))
    if source.pk == target.pk:
        raise ValidationError(
            _("%(name)s cannot be merged into itself.") % {"name": repr(source.name)}
        )
    clashes = list(
        Question.objects.filter(dataset=dataset, responses__llm=source)
        .filter(responses__llm=target)
        .values_list("external_id", flat=True)
        .distinct()[:10]
    )
    if clashes:
        raise ValidationError(
            _(
                "%(source)s and %(target)s both answered question(s) %(questions)s: merging "
                "would give one model two answers to one question."
            )
            % {
                "source": repr(source.name),
                "target": repr(target.name),
                "questions": ", ".join(clashes),
            }
        )
    moved = Response.objects.filter(question__dataset=dataset, llm=source).update(llm=target)
    # The dataset's studies follow: a baseline or a chosen LLM named by the old name.
    for study in Study.objects.select_for_update().filter(dataset=dataset):
        names = study.selection.get("llms") or []
        if study.baseline_llm_id == source.pk or source.name in names:
            if study.baseline_llm_id == source.pk:
                study.baseline_llm = target
            if names:
                study.selection["llms"] = list(
                    dict.fromkeys(target.name if n == source.name else n for n in names)
                )
            study.save(update_fields=["baseline_llm", "selection"])
    if not source.responses.exists() and not Study.objects.filter(baseline_llm=source).exists():
        source.delete()
    return moved
