"""The one writer every format shares: it adds what a validated `Bundle` holds and the database
lacks, in bulk, and leaves what is already there (natural keys: dataset + external id, question +
LLM, study + response(s), item + rater + first/repeat). It must run inside a transaction
(run_import provides it), which is where atomicity lives. Ratings are planned row by row in
rating_rows.py and written by the shared `ratings_record_bulk` service.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from django.db.models import Model

import annotation.importers.ownership as ownership
import annotation.importers.rating_rows as rating_rows
from annotation import pgcopy
from annotation.importers.bundle import (
    Bundle,
    ImportRefused,
    RatingSpec,
    ResponseSpec,
    StudySpec,
    Where,
)
from annotation.importers.bundle import message as _
from annotation.importers.counters import refresh_counters
from annotation.importers.reading import Bar
from annotation.importers.results import ImportResult, clock
from annotation.models import (
    LLM,
    Criterion,
    Dataset,
    Item,
    Question,
    Rater,
    Response,
    Rubric,
    Study,
)
from annotation.models._ids import SHUFFLE_MAX
from annotation.recording import NewRating, ratings_record_bulk
from annotation.rubric_services import rubric_held

BATCH = 2000


@dataclass
class _Ctx:
    bundle: Bundle
    result: ImportResult
    owner: Any  # the importing user, or None
    progress: bool
    dataset: Dataset = field(init=False)  # set first, by _dataset
    llm_ids: dict[str, int] = field(default_factory=dict)
    q_ids: dict[str, int] = field(default_factory=dict)
    r_ids: dict[tuple[int, int], int] = field(default_factory=dict)
    raters: dict[str, Rater] = field(default_factory=dict)
    studies: dict[str, Study] = field(default_factory=dict)
    criteria: dict[tuple[int, str], Criterion] = field(default_factory=dict)
    # Studies that had no items before this import: all their counters are the ones it wrote.
    fresh: set[int] = field(default_factory=set)

    def count(self, entity: str, added: int = 0, skipped: int = 0) -> None:
        self.result.added[entity] += added
        self.result.skipped[entity] += skipped


def _batched_create(model, objs: list, *, enabled: bool, desc: str) -> list:
    out = []
    bar = Bar(total=len(objs), desc=f"writing {desc}", enabled=enabled)
    copy = pgcopy.available()
    size = pgcopy.COPY_BATCH if copy else BATCH
    for start in range(0, len(objs), size):
        batch = objs[start : start + size]
        if copy:
            out.extend(pgcopy.copy_objects(model, batch))
        else:
            out.extend(model.objects.bulk_create(batch))
        bar.update(len(batch))
    bar.close()
    return out


def _find_or_add[M: Model](ctx: _Ctx, entity: str, found: M | None, add: Callable[[], M]) -> M:
    """The stored row (counted as skipped) or a new one from `add()` (counted as added)."""
    if found is not None:
        ctx.count(entity, skipped=1)
        return found
    ctx.count(entity, added=1)
    return add()


def _dataset(ctx: _Ctx) -> None:
    b = ctx.bundle
    if (found := ownership.dataset_named(ctx.owner, b.dataset)) is not None:
        ownership.check_dataset(ctx.owner, found)
    dataset = _find_or_add(
        ctx,
        "datasets",
        found,
        lambda: Dataset.objects.create(
            name=b.dataset, description=b.dataset_description, source=b.dataset_source,
            owner=ctx.owner,
        ),
    )  # fmt: skip
    ctx.dataset = dataset
    ctx.result.dataset_id = dataset.id


def _llms(ctx: _Ctx) -> None:
    """LLMs are created from responses; ratings may name LLMs whose answers are stored already."""
    names = {r.llm for r in ctx.bundle.responses}
    rated = {n for r in ctx.bundle.ratings for n in (r.llm, r.other_llm) if n}
    known = dict(LLM.objects.filter(name__in=names | rated).values_list("name", "id"))
    missing = sorted(names - set(known))
    for llm in LLM.objects.bulk_create([LLM(name=n) for n in missing]):
        known[llm.name] = llm.id
    if any(n not in known for n in missing):  # backends that return no ids
        known = dict(LLM.objects.filter(name__in=names | rated).values_list("name", "id"))
    seen = ownership.llms_seen(ctx.owner, names - set(missing))  # never another's private LLM
    ctx.count("llms", added=len(names) - len(seen), skipped=len(seen))
    ctx.llm_ids = known


def _question_ids(ctx: _Ctx, referenced: set[str]) -> dict[str, int]:
    qs = Question.objects.filter(dataset=ctx.dataset, external_id__in=list(referenced))
    return dict(qs.values_list("external_id", "id"))


def _questions(ctx: _Ctx) -> None:
    b = ctx.bundle
    rows: list[ResponseSpec | RatingSpec] = [*b.responses, *b.ratings]
    referenced = set(b.questions) | {r.question for r in rows}
    q_ids = _question_ids(ctx, referenced)
    stored = Question.objects.filter(pk__in=[q_ids[e] for e in b.questions if e in q_ids])
    for eid, text in stored.values_list("external_id", "text"):
        if b.questions[eid].text != text:
            raise ImportRefused(
                _(
                    "question %(id)s is stored in dataset %(dataset)s with another text (the files "
                    "disagree about what was asked): give the new text a new question id",
                    id=repr(eid),
                    dataset=repr(ctx.dataset.name),
                )
            )
    unknown = referenced - q_ids.keys() - b.questions.keys()
    for spec in rows if unknown else ():  # the first record naming one, for the message
        if spec.question in unknown:
            raise ImportRefused(
                _(
                    "%(where)s: question %(id)s is neither in the file nor in dataset %(dataset)s",
                    where=spec.where,
                    id=repr(spec.question),
                    dataset=repr(ctx.dataset.name),
                )
            )
    new_q = [
        Question(dataset=ctx.dataset, **asdict(s))
        for eid, s in b.questions.items()
        if eid not in q_ids
    ]
    _batched_create(Question, new_q, enabled=ctx.progress, desc="questions")
    ctx.count("questions", added=len(new_q), skipped=len(b.questions) - len(new_q))
    ctx.q_ids = _question_ids(ctx, referenced) if new_q else q_ids


def _new_responses(ctx: _Ctx) -> list[tuple[int, int, str, str]]:
    """Responses have the natural key (question, LLM). A stored response must carry the same
    text, or the two files disagree about what was rated."""
    stored = {
        (qid, lid): text
        for qid, lid, text in Response.objects.filter(question__dataset=ctx.dataset).values_list(
            "question_id", "llm_id", "text"
        )
    }
    seen: dict[tuple[int, int], tuple[str, Where]] = {}
    new: list[tuple[int, int, str, str]] = []  # question id, LLM id, external id, text
    for spec in ctx.bundle.responses:
        key = (ctx.q_ids[spec.question], ctx.llm_ids[spec.llm])
        earlier = stored.get(key), _("the one already stored")
        if key in seen:
            earlier = seen[key][0], _("the one in %(where)s", where=seen[key][1])
        if earlier[0] is not None and earlier[0] != spec.text:
            raise ImportRefused(
                _(
                    "%(where)s: the answer of %(llm)s to question %(id)s differs from %(earlier)s "
                    "(the files disagree about what was rated)",
                    where=spec.where,
                    llm=repr(spec.llm),
                    id=repr(spec.question),
                    earlier=earlier[1],
                )
            )
        if key in seen:
            continue
        seen[key] = (spec.text, spec.where)
        if key in stored:
            ctx.count("responses", skipped=1)
            continue
        new.append((key[0], key[1], spec.external_id, spec.text))
    return new


def _responses(ctx: _Ctx) -> None:
    new = _new_responses(ctx)
    if pgcopy.available():  # no model instance per response (they cost more than the COPY)
        pgcopy.copy_rows(
            Response,
            ("id", "question_id", "llm_id", "external_id", "text", "length"),
            ((rid, q, llm, eid, text, len(text)) for rid, (q, llm, eid, text) in
             zip(pgcopy.reserve_ids(Response._meta.db_table, len(new)), new, strict=True)),
            expected=len(new),
        )  # fmt: skip
    else:
        objs = [Response(question_id=q, llm_id=llm, external_id=eid, text=t, length=len(t))
                for q, llm, eid, t in new]  # fmt: skip
        _batched_create(Response, objs, enabled=ctx.progress, desc="responses")
    ctx.count("responses", added=len(new))
    if ctx.bundle.ratings:
        rows = Response.objects.filter(question__dataset=ctx.dataset)
        ctx.r_ids = {
            (q, lid): rid for rid, q, lid in rows.values_list("id", "question_id", "llm_id")
        }


def _raters(ctx: _Ctx) -> None:
    """Named raters (no account, no external id) are unique by name among the importer's."""
    for spec in ctx.bundle.raters.values():
        found = ownership.named_rater(ctx.owner, spec.name)
        if found is not None and found.kind != spec.kind:
            raise ImportRefused(
                _(
                    "rater %(name)s already exists as a %(kind)s rater, not %(new)s",
                    name=repr(spec.name),
                    kind=found.kind,
                    new=spec.kind,
                )
            )
        ctx.raters[spec.name] = _find_or_add(
            ctx,
            "raters",
            found,
            partial(
                Rater.objects.create,
                name=spec.name,
                kind=spec.kind,
                pool=spec.pool,
                platform=spec.platform,
                owner=ctx.owner,
            ),
        )


def _check_existing_study(study: Study, dataset: Dataset, rubric: Rubric, mode: str) -> None:
    if study.status in (Study.Status.LIVE, Study.Status.PAUSED):
        raise ImportRefused(
            _(
                "study %(name)s is %(status)s: the assignment engine owns its ratings; import "
                "into a closed study (choose another name with --study)",
                name=repr(study.name),
                status=study.status,
            )
        )
    if (study.dataset_id, study.rubric_id, study.mode) != (dataset.id, rubric.id, mode):
        raise ImportRefused(
            _(
                "study %(name)s already exists with another dataset, rubric or mode; choose "
                "another name with --study",
                name=repr(study.name),
            )
        )


def _new_study(ctx: _Ctx, spec: StudySpec, rubric: Rubric) -> Study:
    """A closed study holding imported ratings."""
    return Study.objects.create(
        name=spec.name,
        description=spec.description,
        dataset=ctx.dataset,
        mode=spec.mode,
        rubric=rubric,
        owner=ctx.owner,
        status=Study.Status.CLOSED,
        pair_design=Study.PairDesign.ALL if spec.mode == Rubric.Mode.PAIRWISE else "",
        selection={"imported": True},
        ratings_per_item=1,
        repeat_rate=0,
        hint_policy=Study.HintPolicy.SHOWN,
        admit_onsite=False,
    )


def _studies(ctx: _Ctx) -> None:
    for key, spec in ctx.bundle.studies.items():
        rubric = ownership.rubric_named(ctx.owner, spec.rubric)
        if rubric is None or not rubric_held(rubric):  # held: not deleted until the import ends
            raise ImportRefused(_("unknown rubric %(key)s", key=repr(spec.rubric)))
        found = ownership.study_named(ctx.owner, spec.name)
        if found is not None:
            ownership.check_study(ctx.owner, found)
            _check_existing_study(found, ctx.dataset, rubric, spec.mode)
        study = _find_or_add(ctx, "studies", found, partial(_new_study, ctx, spec, rubric))
        ctx.studies[key] = study
        ctx.result.study_ids.append(study.id)
        for c in rubric.criteria.all():
            ctx.criteria[(rubric.id, c.key)] = c


def _response_id(ctx: _Ctx, spec: RatingSpec, llm: str) -> int:
    rid = ctx.r_ids.get((ctx.q_ids[spec.question], ctx.llm_ids.get(llm, 0)))
    if rid is None:
        raise ImportRefused(
            _(
                "%(where)s: no answer of %(llm)s to %(id)s",
                where=spec.where,
                llm=repr(llm),
                id=repr(spec.question),
            )
        )
    return rid


def _item_keys(ctx: _Ctx) -> dict[tuple, int]:
    rows = Item.objects.filter(study__in=ctx.studies.values())
    return {
        (s, a, b): i
        for i, s, a, b in rows.values_list("id", "study_id", "response_a_id", "response_b_id")
    }


def _create_items(ctx: _Ctx, new: dict[tuple, list[int]]) -> dict[tuple, int]:
    """Store the new items (key (study, a, b) -> [question id, first ratings this import adds],
    so their counters need no update afterwards); returns key -> item id. On PostgreSQL with
    COPY, elsewhere with bulk_create."""
    if not pgcopy.available():
        objs = {
            key: Item(
                study_id=key[0], question_id=q, response_a_id=key[1], response_b_id=key[2],
                n_ratings=n,
            )
            for key, (q, n) in new.items()
        }  # fmt: skip
        created = _batched_create(Item, list(objs.values()), enabled=ctx.progress, desc="items")
        if any(item.pk is None for item in created):  # backends that return no ids
            return _item_keys(ctx)
        return {key: item.pk for key, item in objs.items()}
    ids = dict(zip(new, pgcopy.reserve_ids(Item._meta.db_table, len(new)), strict=True))
    with pgcopy.indexes_rebuilt((Item,), len(new)):
        _copy_items(new, ids)
    return ids


def _copy_items(new: dict[tuple, list[int]], ids: dict[tuple, int]) -> None:
    # A random position per item, as the field's default gives one, from a generator seeded
    # by the OS (one system call per item would cost more than the item's COPY).
    rng = random.Random(os.urandom(16))
    pgcopy.copy_rows(
        Item,
        ("id", "study_id", "question_id", "response_a_id", "response_b_id", "n_ratings",
         "n_reserved", "shuffle", "check_kind", "check_answer"),
        ((ids[key], key[0], q, key[1], key[2], n, 0, rng.randrange(SHUFFLE_MAX), "",
          pgcopy.JSONB_EMPTY)
         for key, (q, n) in new.items()),
        expected=len(new),
        types={"check_answer": pgcopy.RAW},
    )  # fmt: skip


def _item_of(ctx: _Ctx, spec: RatingSpec, pairwise: bool) -> tuple[Study, tuple, bool]:
    """The rating's study, its item's key (study, A, B or None), whether the first model is A."""
    study = ctx.studies[spec.study]
    first = _response_id(ctx, spec, spec.llm)
    a, b = first, None
    if pairwise:
        second = _response_id(ctx, spec, spec.other_llm)
        a, b = (first, second) if first < second else (second, first)
    return study, (study.id, a, b), first == a


def _items(ctx: _Ctx) -> tuple[list[tuple[RatingSpec, tuple]], dict[tuple, int]]:
    """One item per response (star) or per unordered pair (pairwise). Returns, per rating (first
    ratings, then repeats, each in file order), its (study, item key, whether the file's first
    model is response A), and item key -> id."""
    keys = _item_keys(ctx)
    ctx.fresh = {s.id for s in ctx.studies.values()} - {key[0] for key in keys}
    plan: list[tuple[RatingSpec, tuple[Study, tuple, bool]]] = []
    repeats: list[tuple[RatingSpec, tuple[Study, tuple, bool]]] = []
    new_items: dict[tuple[int, int, int | None], list[int]] = {}
    pairwise = {name for name, s in ctx.studies.items() if s.mode == Rubric.Mode.PAIRWISE}
    # Many ratings share (study, question, models): each such set is looked up once.
    seen: dict[tuple[str, str, str, str], tuple[Study, tuple, bool]] = {}
    for spec in ctx.bundle.ratings:
        names = (spec.study, spec.question, spec.llm, spec.other_llm)
        found = seen.get(names)
        if found is None:
            found = seen[names] = _item_of(ctx, spec, spec.study in pairwise)
        key = found[1]
        if key not in keys:
            new = new_items.get(key)
            if new is None:
                new = new_items[key] = [ctx.q_ids[spec.question], 0]
            new[1] += not spec.repeat
        (repeats if spec.repeat else plan).append((spec, found))
    plan += repeats
    keys.update(_create_items(ctx, new_items))
    used = {found[1] for found in seen.values()}
    ctx.count("items", added=len(new_items), skipped=len(used) - len(new_items))
    return plan, keys


def write_bundle(
    bundle: Bundle, result: ImportResult, *, owner=None, progress_enabled: bool = True
) -> None:
    """Add what is missing. Must run inside a transaction (run_import provides it)."""
    t = clock()
    bundle.validate()
    t = result.timed("validate", t)
    ctx = _Ctx(bundle=bundle, result=result, owner=owner, progress=progress_enabled)
    _dataset(ctx)
    _llms(ctx)
    _questions(ctx)
    _responses(ctx)
    ownership.check_added(owner, ctx.dataset, result)
    if bundle.ratings:
        _write_ratings(ctx)
    result.timed("write", t)


def _write_ratings(ctx: _Ctx) -> None:
    _raters(ctx)
    _studies(ctx)
    plan, keys = _items(ctx)
    rows: list[NewRating] = []
    bar = Bar(total=len(plan), desc="writing ratings", enabled=ctx.progress)
    counts = ratings_record_bulk(
        rows=rating_rows.planned(ctx, plan, keys, rows),
        on_batch=bar.update,
        expected=len(plan),
    )
    bar.close()
    for name, n in counts.items():
        ctx.count(name, added=n)
    refresh_counters(ctx.studies.values(), fresh=ctx.fresh, rows=rows)
