"""Factories shared by every test package: datasets, studies, raters and finished ratings.

Studies are made by `study_create` and finished ratings by `ratings_record_bulk`, the services the
app itself uses, so a test builds its data the way an import or a judge run would. The conftest
files turn these into fixtures; test modules may import them from here directly.
"""

from __future__ import annotations

import datetime as dt
import io
import itertools
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from annotation import models as am
from annotation.exports import export_write
from annotation.importers import ImportRefused, dataset_import
from annotation.recording import NewRating, ratings_record_bulk
from annotation.services import study_create, study_set_status

FIXTURES = Path(settings.BASE_DIR) / "fixtures"
L2 = FIXTURES / "llmeval-2"
SHARED = Path(settings.BASE_DIR).parent / "shared" / "data"

_names = itertools.count()


def make_dataset(
    n_questions: int = 4,
    n_llms: int = 3,
    *,
    questions: list[str] | None = None,
    text: str | None = None,
    kind: str = "subjective",
    reference: str | None = None,
    answer_type: str = "",
    task_type: str = "",
) -> am.Dataset:
    """A dataset of n questions (or one per text in `questions`), each answered by n LLMs named
    secret-model-0, 1, ...; `text` replaces every answer's text, `reference` every reference."""
    dataset = am.Dataset.objects.create(name=f"ds-{next(_names)}")
    llms = [am.LLM.objects.get_or_create(name=f"secret-model-{j}")[0] for j in range(n_llms)]
    texts = (
        questions
        if questions is not None
        else [f"Question number {i}?" for i in range(n_questions)]
    )
    for i, question_text in enumerate(texts):
        q = am.Question.objects.create(
            dataset=dataset,
            external_id=f"Q{i}",
            text=question_text,
            kind=kind,
            reference=reference if reference is not None else f"Reference answer {i}",
            answer_type=answer_type,
            task_type=task_type,
        )
        for j, llm in enumerate(llms):
            body = text if text is not None else f"Answer {i}-{j}: " + "words " * (j + 3)
            am.Response.objects.create(question=q, llm=llm, external_id=f"resp-{i}-{j}", text=body)
    return dataset


def make_study(
    *,
    owner: User | None = None,
    mode: str = "star",
    rubric: str | None = None,
    n_questions: int = 4,
    n_llms: int = 3,
    status: str = am.Study.Status.LIVE,
    dataset: am.Dataset | None = None,
    dataset_kw: dict[str, Any] | None = None,
    text: str | None = None,
    **design: Any,
) -> am.Study:
    """A study over a fresh dataset (or `dataset`), live by default, with no hidden repeats unless
    `repeat_rate` says so; `rubric` is a rubric key (llmeval2 or pairwise by mode)."""
    if dataset is None:
        dataset = make_dataset(n_questions, n_llms, text=text, **(dataset_kw or {}))
    key = rubric or ("llmeval2" if mode == "star" else "pairwise")
    design.setdefault("repeat_rate", 0.0)
    study = study_create(
        name=f"study-{next(_names)}",
        dataset=dataset,
        mode=mode,
        rubric=am.Rubric.objects.get(key=key),
        owner=owner,
        **design,
    )
    if status != am.Study.Status.DRAFT:
        study_set_status(study=study, status=am.Study.Status.LIVE)
        if status != am.Study.Status.LIVE:
            study_set_status(study=study, status=status)
    study.refresh_from_db()
    return study


def make_rater(pool: str = am.Rater.Pool.ONSITE, **kw: Any) -> am.Rater:
    """A human rater; an onsite one gets a user account, a crowd one a Prolific worker id."""
    n = next(_names)
    if pool == am.Rater.Pool.ONSITE and "user" not in kw:
        kw["user"] = User.objects.create_user(f"annotator{n}")
    if pool == am.Rater.Pool.CROWD:
        kw.setdefault("platform", "prolific")
        kw.setdefault("external_id", f"worker{n}")
    return am.Rater.objects.create(kind=am.Rater.Kind.HUMAN, pool=pool, **kw)


def make_raters(prefix: str = "") -> dict[str, am.Rater]:
    """One rater per pool: onsite, crowd, public (humans, no accounts) and a judge."""
    return {
        "onsite": am.Rater.objects.create(kind="human", pool="onsite", name=f"{prefix}onsite-1"),
        "crowd": am.Rater.objects.create(kind="human", pool="crowd", name=f"{prefix}crowd-1"),
        "public": am.Rater.objects.create(kind="human", pool="public", name=f"{prefix}public-1"),
        "judge": am.Rater.objects.create(kind="judge", pool="judge", name=f"{prefix}GPT-4"),
    }


def rate(
    study: am.Study,
    item: am.Item,
    rater: am.Rater,
    *,
    at: dt.datetime,
    scores: dict[str, int] | None = None,
    choice: str = "",
    repeat_of: am.Assignment | None = None,
    left_is_a: bool = True,
    hint_shown: bool = False,
    seconds: float = 30.0,
) -> am.Rating:
    """A finished rating submitted at `at`, `seconds` after it was served; scores by criterion
    key. Recorded by ratings_record_bulk, as importers and judges record theirs."""
    ids = dict(am.Criterion.objects.filter(rubric=study.rubric).values_list("key", "id"))
    row = NewRating(
        study_id=study.pk,
        item_id=item.pk,
        rater_id=rater.pk,
        choice=choice,
        scores={ids[key]: value for key, value in (scores or {}).items()},
        left_is_a=left_is_a,
        hint_shown=hint_shown,
        is_repeat=repeat_of is not None,
        repeat_of_id=repeat_of.pk if repeat_of is not None else None,
        served_at=at - dt.timedelta(seconds=seconds),
        submitted_at=at,
    )
    ratings_record_bulk(rows=[row])
    assert row.rating is not None
    return row.rating


def table_counts() -> dict[str, int]:
    """Rows per table, to show that a refused import or request wrote nothing."""
    return {
        m.__name__: m.objects.count()
        for m in (
            am.Dataset,
            am.Question,
            am.LLM,
            am.Response,
            am.Study,
            am.Item,
            am.Rater,
            am.Assignment,
            am.Rating,
            am.Score,
        )
    }


def l2_files(folder: str) -> list[Path]:
    """The fixture LLMEval-2 subject files under fixtures/llmeval-2/<folder>."""
    return sorted((L2 / folder).glob("*_data.json"))


def generic_export(study: am.Study, fmt: str = "jsonl") -> bytes:
    """The study in the generic format (docs/import-formats.md), as the export command writes it."""
    buf = io.BytesIO()
    export_write(study, what="generic", fmt=fmt, out=buf)
    return buf.getvalue()


def generic_round_trip(study: am.Study, fmt: str, folder: Path, *, rubric: str | None, n: int = 1):
    """Export the study to `folder` and import the file as a new dataset and study ("copy n of
    ..."); the new study."""
    path = folder / f"export{n}.{fmt}"
    path.write_bytes(generic_export(study, fmt))
    result = dataset_import(
        format=fmt,
        paths=[path],
        dataset=f"copy {n}",
        study=f"copy {n} of {study.name}",
        rubric=rubric,
        progress=False,
    )
    return am.Study.objects.get(pk=result.study_ids[0])


def import_refused(path: Path, text: str, *, match: str, dataset: str, **options: Any) -> None:
    """Write `text` to `path` (a generic CSV/JSONL file), import it with the llmeval2 rubric unless
    `rubric` says otherwise, and check the import is refused with a message matching `match`."""
    path.write_text(text, encoding="utf-8")
    options.setdefault("rubric", "llmeval2")
    with pytest.raises(ImportRefused, match=match):
        dataset_import(
            format=path.suffix[1:], paths=[path], dataset=dataset, progress=False, **options
        )


def study_over(
    dataset: am.Dataset, rubric: am.Rubric, *, owner: User, name: str, **design: Any
) -> am.Study:
    """A draft study over every question of `dataset` (or design's `selection`), in the rubric's
    mode, with study_create's defaults for everything `design` does not say."""
    return study_create(
        name=name, dataset=dataset, mode=rubric.mode, rubric=rubric, owner=owner, **design
    )
