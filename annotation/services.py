"""Write workflows that touch several models: `<entity>_<verb>`, keyword-only, atomic."""

from __future__ import annotations

import itertools
import random
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils.translation import gettext as _

from annotation.catalogue import selection_check
from annotation.checks import ATTENTION_LLMS, check_remove
from annotation.importers import ImportResult, dataset_import, save_uploads
from annotation.models import LLM, Dataset, Item, Question, Response, Rubric, Study
from annotation.rubric_services import rubric_held

# The import options a caller may pass on (which ones a format uses is the importer's check).
IMPORT_OPTIONS = ("dataset", "study", "rater", "rater_kind", "rubric")


def _selected_questions(dataset: Dataset, selection: dict[str, Any]):
    qs = Question.objects.filter(dataset=dataset)
    if selection.get("task_types"):
        qs = qs.filter(task_type__in=selection["task_types"])
    if selection.get("kinds"):
        qs = qs.filter(kind__in=selection["kinds"])
    if selection.get("question_ids"):
        qs = qs.filter(external_id__in=selection["question_ids"])
    if selection.get("max_questions"):
        qs = qs.order_by("id")[: int(selection["max_questions"])]
    return qs


def _pairs(
    responses: list[Response],
    *,
    design: str,
    baseline: LLM | None,
    k: int | None,
    rng: random.Random,
) -> Iterable[tuple[Response, Response]]:
    if design == Study.PairDesign.ALL:
        yield from itertools.combinations(responses, 2)
    elif design == Study.PairDesign.BASELINE:
        base = [r for r in responses if baseline is not None and r.llm_id == baseline.id]
        if not base:
            return
        for r in responses:
            if r.llm_id != base[0].llm_id:
                yield base[0], r
    elif design == Study.PairDesign.SAMPLED:
        all_pairs = list(itertools.combinations(responses, 2))
        yield from rng.sample(all_pairs, min(k or 1, len(all_pairs)))


def _check_design(study: Study) -> None:
    """The checks of a new or edited study's definition; every message names the bad value."""
    mode, rubric = study.mode, study.rubric
    if mode not in (Rubric.Mode.STAR, Rubric.Mode.PAIRWISE):
        raise ValidationError(
            {"mode": _("Unknown mode %(mode)s: use 'star' or 'pairwise'.") % {"mode": repr(mode)}}
        )
    if rubric.mode != mode:
        raise ValidationError(
            {"rubric": f"Rubric {rubric.key!r} is for {rubric.mode} studies, not {mode}."}
        )
    if mode == Rubric.Mode.PAIRWISE:
        design = study.pair_design
        if design == Study.PairDesign.BASELINE and study.baseline_llm is None:
            raise ValidationError({"baseline_llm": _("The baseline design needs a baseline LLM.")})
        if design == Study.PairDesign.SAMPLED and not study.pairs_per_question:
            raise ValidationError({"pairs_per_question": _("The sampled design needs k >= 1.")})
    selection_check(
        dataset=study.dataset,
        selection=study.selection,
        baseline_llm=study.baseline_llm,
        mode=mode,
    )


def _planned_items(study: Study, *, seed: int) -> list[Item]:
    """The study's items (unsaved) from its dataset subset and design."""
    selection, mode = study.selection, study.mode
    questions = list(_selected_questions(study.dataset, selection))
    responses = Response.objects.filter(question__in=questions).select_related("llm")
    responses = responses.exclude(llm__name__in=ATTENTION_LLMS)  # another study's checks
    if selection.get("llms"):
        responses = responses.filter(llm__name__in=selection["llms"])
    by_question: dict[int, list[Response]] = {}
    for r in responses.order_by("question_id", "id"):
        by_question.setdefault(r.question_id, []).append(r)

    rng = random.Random(seed)
    items: list[Item] = []
    for qid, rs in by_question.items():
        if mode == Rubric.Mode.STAR:
            items.extend(Item(study=study, question_id=qid, response_a=r) for r in rs)
            continue
        pairs = _pairs(
            rs,
            design=study.pair_design,
            baseline=study.baseline_llm,
            k=study.pairs_per_question,
            rng=rng,
        )
        for a, b in pairs:
            lo, hi = (a, b) if a.id < b.id else (b, a)
            items.append(Item(study=study, question_id=qid, response_a=lo, response_b=hi))
    if not items:
        raise ValidationError(_("The selection yields no items: check task types, kinds and LLMs."))
    return items


def _item_key(item: Item) -> tuple[int, int | None]:
    return item.response_a_id, item.response_b_id


def _rebuild_items(study: Study, *, seed: int, checks_fit: bool) -> None:
    """Bring a draft's items in line with its edited definition. An item the new definition
    still asks for is kept as it is, with its gold mark (set on the quality page); only the
    others go and the missing ones are created. When the mode, rubric or dataset changed the
    checks no longer fit (answers name the old criteria; an attention check's question lives in
    the old dataset), so gold marks are cleared and attention checks dropped."""
    planned = _planned_items(study, seed=seed)
    if not checks_fit:
        for item in study.items.filter(check_kind=Item.CheckKind.ATTENTION):
            check_remove(study=study, item_id=item.pk)
        study.items.update(check_kind="", check_answer={})
    kept = study.items.exclude(check_kind=Item.CheckKind.ATTENTION)
    existing = {_item_key(item): item.pk for item in kept.only("response_a", "response_b")}
    wanted = {_item_key(item) for item in planned}
    kept.exclude(pk__in=[pk for key, pk in existing.items() if key in wanted]).delete()
    new = [item for item in planned if _item_key(item) not in existing]
    Item.objects.bulk_create(new, batch_size=2000)


@transaction.atomic
def study_save(
    *,
    study: Study | None,
    owner=None,
    name: str,
    dataset: Dataset,
    mode: str,
    rubric: Rubric,
    selection: dict[str, Any] | None = None,
    pair_design: str = Study.PairDesign.ALL,
    baseline_llm: LLM | None = None,
    pairs_per_question: int | None = None,
    seed: int = 0,
    **design: Any,
) -> Study:
    """Create a study (study=None; owner is its owner) or change a draft's definition, then
    plan its items: what study_create and study_update share.

    selection: {"task_types": [...], "kinds": [...], "llms": [names], "question_ids": [...],
    "max_questions": n}. Star items are one response each; pairwise items are unordered pairs of
    responses to the same question, stored with response_a.id < response_b.id. design: the
    assignment design's fields (ratings_per_item, repeat_rate, ...).
    """
    if not rubric_held(rubric):
        raise ValidationError(
            {"rubric": _("Rubric %(value)s does not exist.") % {"value": rubric.key}}
        )
    fields = {
        "name": name,
        "dataset": dataset,
        "mode": mode,
        "rubric": rubric,
        "selection": dict(selection or {}),
        "pair_design": pair_design if mode == Rubric.Mode.PAIRWISE else "",
        "baseline_llm": baseline_llm,
        "pairs_per_question": pairs_per_question,
        **design,
    }
    if study is None:
        study = Study(owner=owner, **fields)
        _check_design(study)
        study.full_clean()
        study.save()
        Item.objects.bulk_create(_planned_items(study, seed=seed), batch_size=2000)
        return study
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status != Study.Status.DRAFT or study.assignments.exists():
        raise ValidationError(
            f"Only a draft study can be edited; {study.name!r} is {study.get_status_display()}."
        )
    checks_fit = (study.mode, study.rubric_id, study.dataset_id) == (mode, rubric.pk, dataset.pk)
    for key, value in fields.items():
        setattr(study, key, value)
    _check_design(study)
    study.full_clean()
    study.save()
    _rebuild_items(study, seed=seed, checks_fit=checks_fit)
    return study


def study_create(*, owner=None, **definition: Any) -> Study:
    """Create a study and its items from a dataset subset; the keywords are study_save's."""
    return study_save(study=None, owner=owner, **definition)


def study_update(*, study: Study, **definition: Any) -> Study:
    """Change a draft study's definition (study_save's keywords) and rebuild its items. Refused
    once the study was launched (live, paused or closed) or has any assignment: annotators' work
    is never rebuilt."""
    return study_save(study=study, **definition)


@transaction.atomic
def study_set_status(*, study: Study, status: str) -> Study:
    """Move the study to `status` when its current status allows it. The current status is read
    from the locked row, not from `study` (read earlier by the request): otherwise a Close and a
    Resume sent at the same moment both pass, and the Resume saved last makes a closed study
    live again. `study` is given the status it ends with."""
    study.status = (
        Study.objects.select_for_update().filter(pk=study.pk).values_list("status", flat=True).get()
    )
    allowed: dict[str, set[str]] = {
        Study.Status.DRAFT: {Study.Status.LIVE, Study.Status.CLOSED},
        Study.Status.LIVE: {Study.Status.PAUSED, Study.Status.CLOSED},
        Study.Status.PAUSED: {Study.Status.LIVE, Study.Status.CLOSED},
        Study.Status.CLOSED: set(),
    }
    if status not in allowed[study.status]:
        words = dict(Study.Status.choices)
        raise ValidationError(
            _("A %(status)s study cannot become %(new)s.")
            % {"status": words[study.status], "new": words.get(status, status)}
        )
    study.status = status
    study.save(update_fields=["status"])
    return study


def uploads_import(
    *,
    format: str,
    files: Sequence[UploadedFile],
    folder: str,
    user: User | AnonymousUser,
    dry_run: bool,
    options: Mapping[str, str | None],
) -> ImportResult:
    """Import uploaded files (the API and the admin page): written to a temporary folder for
    the importers, everything or nothing (raises ImportRefused). An empty option is no option."""
    given = {name: options.get(name) or None for name in IMPORT_OPTIONS}
    with tempfile.TemporaryDirectory(prefix="import-") as tmp:
        paths = save_uploads(files, folder, tmp)
        return dataset_import(
            format=format, paths=paths, user=user, dry_run=dry_run, progress=False, **given
        )
