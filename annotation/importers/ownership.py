"""Whose data an import may add to (annotation.permissions has the rule).

Names are unique per owner: an import by an organizer resolves a dataset or study name among
their own rows (and, for datasets, the shared catalogue), never another organizer's, so an import
under another's name makes the importer's own. Into the shared catalogue (a dataset with no
owner) it may add scores of the answers stored there, in the organizer's own studies, but no
question or answer: every organizer reads that catalogue. The command line (no user) and
superusers may add anything anywhere; the checks below stay as a second line.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from annotation.importers.bundle import ImportRefused
from annotation.importers.bundle import message as _
from annotation.importers.results import ImportResult
from annotation.models import Dataset, Rater, Rubric, Study
from annotation.permissions import (
    AmbiguousName,
    llms_visible,
    may_write_dataset,
    one_named,
    rubrics_visible,
)


def _all_rows(owner: Any) -> bool:
    return owner is None or owner.is_superuser


def dataset_named(owner: Any, name: str) -> Dataset | None:
    """The dataset an import by `owner` (None: the command line) means by `name`: the
    organizer's own, else the shared catalogue's; another organizer's dataset of that name is
    not looked at (a new one of their own is made). The command line and superusers: their
    own or the shared one, else the only one with that name; several is refused."""
    qs = Dataset.objects.all()
    if not _all_rows(owner):
        qs = qs.filter(Q(owner=owner) | Q(owner__isnull=True))
    try:
        return one_named(qs, owner, name=name)
    except AmbiguousName as e:
        raise ImportRefused(_ambiguous(e)) from None


def _ambiguous(e: AmbiguousName) -> str:
    return _("%(error)s Import with --user OWNER to choose theirs.", error=e.args[0])


def study_named(owner: Any, name: str) -> Study | None:
    """The study an import by `owner` means by `name`: the organizer's own only; the command
    line and superusers: their own or the ownerless one, else the only one; several is
    refused."""
    qs = Study.objects.all() if _all_rows(owner) else Study.objects.filter(owner=owner)
    try:
        return one_named(qs, owner, name=name)
    except AmbiguousName as e:
        raise ImportRefused(_ambiguous(e)) from None


def rubric_named(owner: Any, key: str, **lookup: Any) -> Rubric | None:
    """The rubric an import by `owner` means by `key`: their own, else the built-in one, else
    one their studies use; another organizer's rubric is unknown, as a missing one. The command
    line and superusers: every rubric (the ownerless one first); several is refused."""
    qs = Rubric.objects.filter(**lookup)
    if not _all_rows(owner):
        qs = qs.filter(pk__in=rubrics_visible(owner).values("pk"))
    try:
        return one_named(qs, owner, key=key)
    except AmbiguousName as e:
        raise ImportRefused(_ambiguous(e)) from None


def named_rater(owner: Any, name: str) -> Rater | None:
    """A named rater (no account, no worker id) of `owner`'s imports and judges; the command
    line's are shared among its imports. Another organizer's rater of the same name is never
    used: their ratings would join, and each would see the other's in their study."""
    named = Rater.objects.filter(name=name, user__isnull=True, external_id="")
    return (named.filter(owner=owner) if owner is not None else named.filter(owner=None)).first()


def check_dataset(owner: Any, dataset: Dataset) -> None:
    """Refuse an existing dataset that belongs to another organizer."""
    if dataset.owner_id is not None and not may_write_dataset(owner, dataset):
        raise ImportRefused(
            _(
                "the dataset name %(name)s is taken by another organizer; import under another "
                "dataset name",
                name=repr(dataset.name),
            )
        )


def check_added(owner: Any, dataset: Dataset, result: ImportResult) -> None:
    """Refuse new questions or answers in a dataset the importer may not write (the shared
    catalogue); call it once they are counted."""
    if may_write_dataset(owner, dataset):
        return
    if result.added.get("questions") or result.added.get("responses"):
        raise ImportRefused(
            _(
                "the dataset %(name)s is the shared catalogue: only an administrator adds "
                "questions or answers to it; import them under a dataset name of your own "
                "(scores of its stored answers may be imported into it)",
                name=repr(dataset.name),
            )
        )


def check_study(owner: Any, study: Study) -> None:
    """Refuse an existing study that is not the importer's."""
    if owner is None or owner.is_superuser or study.owner_id == owner.pk:
        return
    raise ImportRefused(
        _(
            "the study name %(name)s is taken by another organizer; import under another study "
            "name",
            name=repr(study.name),
        )
    )


def llms_seen(owner: Any, stored: set[str]) -> set[str]:
    """Of the LLM names already stored, those `owner` may know of: an LLM whose only answers are
    in another organizer's dataset counts as added, as if it were new, so the import's counts do
    not tell that another organizer has answers of an LLM of that name."""
    if _all_rows(owner) or not stored:
        return stored
    return set(llms_visible(owner).filter(name__in=stored).values_list("name", flat=True))
