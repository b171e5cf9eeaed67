"""The machinery every importer shares: a format-neutral bundle of what a file holds, a repair log,
and one writer that adds only what is missing, in bulk, inside one transaction.

A format module only parses: it turns its files into a `Bundle` (questions, responses, ratings,
plain Python objects) and notes repairs on the way, or raises `ImportRefused` naming the file and
the record. `write_bundle` then does the database work the same way for every format, which is
where atomicity (one transaction), idempotency (natural keys: dataset + external id, question +
LLM, study + response(s), item + rater) and speed (bulk_create in batches) live.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import (
    LLM,
    Assignment,
    Dataset,
    ImportRecord,
    Item,
    PairChoice,
    Question,
    Rater,
    Rating,
    Response,
    Rubric,
    Score,
    Study,
)

BATCH = 2000
PROGRESS_MIN = 2000  # records; smaller files get no progress bar


class ImportRefused(Exception):
    """A file cannot be imported as it is; the message names the file and the record."""


# --- what a file holds ------------------------------------------------------------------------


@dataclass
class QuestionSpec:
    external_id: str
    text: str
    task_type: str = ""
    subcategory: str = ""
    kind: str = ""
    answer_type: str = ""
    reference: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class ResponseSpec:
    question: str  # question external id
    llm: str
    text: str
    external_id: str = ""
    where: str = ""  # "file, record" for messages


@dataclass
class RaterSpec:
    name: str
    kind: str  # human | judge
    pool: str  # onsite | crowd | public | judge


@dataclass
class StudySpec:
    name: str
    mode: str  # star | pairwise
    rubric: str  # rubric key
    description: str = ""


@dataclass
class RatingSpec:
    study: str  # StudySpec key in the bundle
    rater: str  # RaterSpec name
    question: str
    llm: str  # the rated response (star) or the response shown as model 1 (pairwise)
    other_llm: str = ""  # pairwise: the second response
    scores: dict[str, int] = field(default_factory=dict)  # criterion key -> value (star)
    choice: str = ""  # pairwise, relative to (llm, other_llm): "first", "second", "tie", "both_bad"
    first_on_left: bool = True  # pairwise: llm's response was shown on the left
    hint_shown: bool = False
    repeat: bool = False  # a second scoring of the same item by the same rater
    comment: str = ""
    where: str = ""


@dataclass
class Bundle:
    dataset: str
    dataset_description: str = ""
    dataset_source: str = ""
    questions: dict[str, QuestionSpec] = field(default_factory=dict)
    responses: list[ResponseSpec] = field(default_factory=list)
    raters: dict[str, RaterSpec] = field(default_factory=dict)
    studies: dict[str, StudySpec] = field(default_factory=dict)
    ratings: list[RatingSpec] = field(default_factory=list)

    def add_question(self, spec: QuestionSpec, *, where: str) -> QuestionSpec:
        """Keep the first spec of a question id; a later spec must not contradict it."""
        have = self.questions.get(spec.external_id)
        if have is None:
            self.questions[spec.external_id] = spec
            return spec
        for attr in ("task_type", "kind", "reference"):
            if (
                getattr(spec, attr)
                and getattr(have, attr)
                and getattr(spec, attr) != getattr(have, attr)
            ):
                raise ImportRefused(
                    f"{where}: question {spec.external_id!r} has {attr} "
                    f"{getattr(spec, attr)!r} here but {getattr(have, attr)!r} earlier"
                )
        return have


# --- repairs and results ----------------------------------------------------------------------


@dataclass
class Repair:
    what: str
    file: str
    records: list[str] = field(default_factory=list)

    def line(self) -> str:
        shown = ", ".join(self.records[:5]) + (" ..." if len(self.records) > 5 else "")
        return f"repaired {len(self.records)}: {self.what} ({self.file or 'all files'}: {shown})"


class RepairLog:
    """Counted repairs, grouped by what was repaired and in which file."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], Repair] = {}

    def add(self, what: str, file: str | Path, record: str) -> None:
        path = Path(file) if file else None
        # The parent folder tells apart same-named files (human-score/ and gpt-score/).
        name = (
            f"{path.parent.name}/{path.name}"
            if path and path.parent.name
            else (path.name if path else "")
        )
        key = (what, name)
        if key not in self._by_key:
            self._by_key[key] = Repair(what=what, file=name)
        self._by_key[key].records.append(str(record))

    def __iter__(self) -> Iterator[Repair]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def total(self) -> int:
        return sum(len(r.records) for r in self)


ENTITIES = (
    "datasets",
    "questions",
    "llms",
    "responses",
    "studies",
    "items",
    "raters",
    "assignments",
    "ratings",
    "scores",
)


@dataclass
class ImportResult:
    format: str
    paths: list[str]
    dry_run: bool = False
    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENTITIES, 0))
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENTITIES, 0))
    repairs: list[Repair] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dataset_id: int | None = None
    study_ids: list[int] = field(default_factory=list)
    record_id: int | None = None

    @property
    def total_added(self) -> int:
        return sum(self.added.values())

    def counts(self) -> dict[str, dict[str, int]]:
        return {"added": dict(self.added), "skipped": dict(self.skipped)}

    def summary_lines(self) -> list[str]:
        verb = "would add" if self.dry_run else "added"
        lines = [line.line() for line in self.repairs]
        lines += self.notes
        for name in ENTITIES:
            a, s = self.added[name], self.skipped[name]
            if a or s:
                lines.append(f"{name}: {verb} {a}, skipped {s} (already present)")
        lines.append(
            f"total {verb} {self.total_added}"
            + (" (dry run: nothing was written)" if self.dry_run else "")
        )
        return lines


# --- progress ---------------------------------------------------------------------------------


def _tty() -> bool:
    return sys.stderr.isatty()


def progress(iterable: Iterable, *, total: int | None, desc: str, enabled: bool):
    """A tqdm bar on stderr over a large input when stderr is a terminal; the iterable otherwise."""
    if not enabled or (total is not None and total < PROGRESS_MIN) or not _tty():
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, leave=False, unit="rec")


class Bar:
    """A bar advanced by hand (records over several files, rows written in batches)."""

    def __init__(self, *, total: int, desc: str, enabled: bool) -> None:
        self._bar = None
        if enabled and total >= PROGRESS_MIN and _tty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, unit="rec")

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


# --- shared parsing helpers -------------------------------------------------------------------


def at(file: str | Path, record: str) -> str:
    """'file, record N' for messages; records already named 'line N' or 'record N' stay so."""
    record = str(record)
    if not record.startswith(("line ", "record ", "dialog ")):
        record = f"record {record}"
    return f"{Path(file).name}, {record}"


def as_text(value: Any, *, what: str, file: str | Path, record: str, repairs: RepairLog) -> str:
    """Text fields must be strings; numbers and booleans are turned into their text (a counted
    repair), anything else is refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        repairs.add(f"{what} was a JSON boolean, stored as the text 'True'/'False'", file, record)
        return "True" if value else "False"
    if isinstance(value, int | float):
        repairs.add(f"{what} was a JSON number, stored as text", file, record)
        return str(value)
    if value is None:
        raise ImportRefused(f"{at(file, record)}: {what} is missing (null)")
    raise ImportRefused(f"{at(file, record)}: {what} must be text, not {type(value).__name__}")


def check_score(
    value: Any, *, lo: int, hi: int, criterion: str, file: str | Path, record: str
) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value.strip())
        else:
            raise ImportRefused(
                f"{at(file, record)}: score {criterion}={value!r} is not a whole number"
            )
    if not lo <= value <= hi:
        raise ImportRefused(
            f"{at(file, record)}: score {criterion}={value} is outside the rubric's range {lo}-{hi}"
        )
    return value


# --- the writer -------------------------------------------------------------------------------


def _batched_create(model, objs: list, *, enabled: bool, desc: str) -> list:
    out = []
    bar = Bar(total=len(objs), desc=f"writing {desc}", enabled=enabled)
    for start in range(0, len(objs), BATCH):
        batch = objs[start : start + BATCH]
        out.extend(model.objects.bulk_create(batch))
        bar.update(len(batch))
    bar.close()
    return out


def _canonical_choice(choice: str, first_is_a: bool, where: str) -> str:
    if choice in ("tie", "both_bad"):
        return choice
    if choice == "first":
        return PairChoice.A if first_is_a else PairChoice.B
    if choice == "second":
        return PairChoice.B if first_is_a else PairChoice.A
    raise ImportRefused(f"{where}: unknown pairwise choice {choice!r}")


def write_bundle(
    bundle: Bundle, result: ImportResult, *, owner=None, progress_enabled: bool = True
):
    """Add what is missing. Must run inside a transaction (run_import provides it)."""
    now = timezone.now()
    added, skipped = result.added, result.skipped

    dataset = Dataset.objects.filter(name=bundle.dataset).first()
    if dataset is None:
        dataset = Dataset.objects.create(
            name=bundle.dataset,
            description=bundle.dataset_description,
            source=bundle.dataset_source,
            owner=owner,
        )
        added["datasets"] += 1
    else:
        skipped["datasets"] += 1
    result.dataset_id = dataset.id

    # LLMs: created from responses; ratings may name LLMs whose answers are already stored.
    names = {r.llm for r in bundle.responses}
    rated = {n for r in bundle.ratings for n in (r.llm, r.other_llm) if n}
    known = dict(LLM.objects.filter(name__in=names | rated).values_list("name", "id"))
    missing = sorted(names - set(known))
    for llm in LLM.objects.bulk_create([LLM(name=n) for n in missing]):
        known[llm.name] = llm.id
    if any(n not in known for n in missing):  # backends that return no ids
        known = dict(LLM.objects.filter(name__in=names | rated).values_list("name", "id"))
    added["llms"] += len(missing)
    skipped["llms"] += len(names) - len(missing)
    llm_ids = known

    # Questions.
    referenced = (
        set(bundle.questions)
        | {r.question for r in bundle.responses}
        | {r.question for r in bundle.ratings}
    )
    q_ids = dict(
        Question.objects.filter(dataset=dataset, external_id__in=list(referenced)).values_list(
            "external_id", "id"
        )
    )
    for spec in [*bundle.responses, *bundle.ratings]:
        if spec.question not in q_ids and spec.question not in bundle.questions:
            raise ImportRefused(
                f"{spec.where}: question {spec.question!r} is neither in the file nor in dataset "
                f"{dataset.name!r}"
            )
    new_q = [
        Question(
            dataset=dataset,
            external_id=s.external_id,
            text=s.text,
            task_type=s.task_type,
            subcategory=s.subcategory,
            kind=s.kind,
            answer_type=s.answer_type,
            reference=s.reference,
            meta=s.meta,
        )
        for eid, s in bundle.questions.items()
        if eid not in q_ids
    ]
    skipped["questions"] += sum(1 for eid in bundle.questions if eid in q_ids)
    _batched_create(Question, new_q, enabled=progress_enabled, desc="questions")
    added["questions"] += len(new_q)
    if new_q:
        q_ids = dict(
            Question.objects.filter(dataset=dataset, external_id__in=list(referenced)).values_list(
                "external_id", "id"
            )
        )

    # Responses: natural key (question, LLM). An existing response must carry the same text, or
    # the two files disagree about what was rated.
    existing = {
        (qid, lid): (rid, text)
        for rid, qid, lid, text in Response.objects.filter(question__dataset=dataset).values_list(
            "id", "question_id", "llm_id", "text"
        )
    }
    new_r: list[Response] = []
    seen: dict[tuple[int, int], tuple[str, str]] = {}
    for spec in bundle.responses:
        key = (q_ids[spec.question], llm_ids[spec.llm])  # both exist: checked and created above
        if key in existing:
            if existing[key][1] != spec.text:
                raise ImportRefused(
                    f"{spec.where}: the answer of {spec.llm!r} to question {spec.question!r} "
                    "differs from the one already stored (the files disagree about what was rated)"
                )
            if key not in seen:
                skipped["responses"] += 1
            seen.setdefault(key, (spec.text, spec.where))
            continue
        if key in seen:
            if seen[key][0] != spec.text:
                raise ImportRefused(
                    f"{spec.where}: the answer of {spec.llm!r} to question {spec.question!r} "
                    f"differs from the one in {seen[key][1]}"
                )
            continue
        seen[key] = (spec.text, spec.where)
        new_r.append(
            Response(
                question_id=key[0],
                llm_id=key[1],
                external_id=spec.external_id,
                text=spec.text,
                length=len(spec.text),
            )
        )
    _batched_create(Response, new_r, enabled=progress_enabled, desc="responses")
    added["responses"] += len(new_r)
    if not bundle.ratings:
        return
    r_ids = {
        (qid, lid): rid
        for rid, qid, lid in Response.objects.filter(question__dataset=dataset).values_list(
            "id", "question_id", "llm_id"
        )
    }

    # Raters: named raters (no account, no external id) are unique by name.
    raters: dict[str, Rater] = {}
    for spec in bundle.raters.values():
        rater = Rater.objects.filter(name=spec.name, user__isnull=True, external_id="").first()
        if rater is None:
            rater = Rater.objects.create(name=spec.name, kind=spec.kind, pool=spec.pool)
            added["raters"] += 1
        else:
            skipped["raters"] += 1
            if rater.kind != spec.kind:
                raise ImportRefused(
                    f"rater {spec.name!r} already exists as a {rater.kind} rater, not {spec.kind}"
                )
        raters[spec.name] = rater

    # Studies.
    studies: dict[str, Study] = {}
    for key, spec in bundle.studies.items():
        rubric = Rubric.objects.filter(key=spec.rubric).first()
        if rubric is None:
            raise ImportRefused(f"unknown rubric {spec.rubric!r}")
        study = Study.objects.filter(name=spec.name).first()
        if study is None:
            study = Study.objects.create(
                name=spec.name,
                description=spec.description,
                dataset=dataset,
                mode=spec.mode,
                rubric=rubric,
                owner=owner,
                status=Study.Status.CLOSED,
                pair_design=Study.PairDesign.ALL if spec.mode == Rubric.Mode.PAIRWISE else "",
                selection={"imported": True},
                ratings_per_item=1,
                repeat_rate=0,
                hint_policy=Study.HintPolicy.SHOWN,
                admit_onsite=False,
            )
            added["studies"] += 1
        else:
            skipped["studies"] += 1
            if study.status in (Study.Status.LIVE, Study.Status.PAUSED):
                raise ImportRefused(
                    f"study {spec.name!r} is {study.status}: the assignment engine owns its "
                    "ratings; import into a closed study (choose another name with --study)"
                )
            if (study.dataset_id, study.rubric_id, study.mode) != (
                dataset.id,
                rubric.id,
                spec.mode,
            ):
                raise ImportRefused(
                    f"study {spec.name!r} already exists with another dataset, rubric or mode; "
                    "choose another name with --study"
                )
        studies[key] = study
        result.study_ids.append(study.id)

    criteria = {}
    for study in studies.values():
        for c in study.rubric.criteria.all():
            criteria[(study.rubric_id, c.key)] = c

    # Items: one per response (star) or per unordered pair (pairwise).
    item_keys: dict[tuple[int, int, int | None], int] = {
        (s, a, b): i
        for i, s, a, b in Item.objects.filter(study__in=studies.values()).values_list(
            "id", "study_id", "response_a_id", "response_b_id"
        )
    }
    plan = []  # (spec, study, item key, first response id, question id)
    new_items: dict[tuple, Item] = {}
    for spec in bundle.ratings:
        study = studies[spec.study]
        qid = q_ids[spec.question]
        first = r_ids.get((qid, llm_ids.get(spec.llm)))
        if first is None:
            raise ImportRefused(f"{spec.where}: no answer of {spec.llm!r} to {spec.question!r}")
        if study.mode == Rubric.Mode.PAIRWISE:
            second = r_ids.get((qid, llm_ids.get(spec.other_llm)))
            if second is None:
                raise ImportRefused(
                    f"{spec.where}: no answer of {spec.other_llm!r} to {spec.question!r}"
                )
            a, b = min(first, second), max(first, second)
        else:
            a, b = first, None
        key = (study.id, a, b)
        if key not in item_keys and key not in new_items:
            new_items[key] = Item(study=study, question_id=qid, response_a_id=a, response_b_id=b)
        plan.append((spec, study, key, first))
    created_items = _batched_create(
        Item, list(new_items.values()), enabled=progress_enabled, desc="items"
    )
    added["items"] += len(created_items)
    skipped["items"] += len({p[2] for p in plan}) - len(created_items)
    if created_items and any(i.pk is None for i in created_items):
        item_keys = {
            (s, a, b): i
            for i, s, a, b in Item.objects.filter(study__in=studies.values()).values_list(
                "id", "study_id", "response_a_id", "response_b_id"
            )
        }
    else:
        for key, item in new_items.items():
            item_keys[key] = item.pk

    # Assignments, ratings and scores. A rater's first rating of an item is its first exposure; a
    # second scoring in the same import (a repeat) is stored as a repeat of that first one.
    first_exposure = {
        (item_id, rater_id): aid
        for aid, item_id, rater_id in Assignment.objects.filter(
            study__in=studies.values(), is_repeat=False
        ).values_list("id", "item_id", "rater_id")
    }
    have_repeat = set(
        Assignment.objects.filter(study__in=studies.values(), is_repeat=True).values_list(
            "item_id", "rater_id"
        )
    )
    firsts, repeats = [], []
    taken: set[tuple[int, int, bool]] = set()
    for spec, study, key, first in plan:
        item_id = item_keys[key]
        rater = raters[spec.rater]
        k = (item_id, rater.id, spec.repeat)
        exists = (
            (item_id, rater.id) in have_repeat
            if spec.repeat
            else (item_id, rater.id) in first_exposure
        )
        if exists or k in taken:
            if k in taken:
                raise ImportRefused(
                    f"{spec.where}: rater {spec.rater!r} rates this item twice in the same import"
                )
            skipped["assignments"] += 1
            skipped["ratings"] += 1
            skipped["scores"] += len(spec.scores)
            continue
        taken.add(k)
        (repeats if spec.repeat else firsts).append((spec, study, item_id, rater, first, key))

    def build(rows, *, repeat: bool):
        assignments, payloads = [], []
        for spec, study, item_id, rater, first, key in rows:
            left_is_a = True
            choice = ""
            if study.mode == Rubric.Mode.PAIRWISE:
                first_is_a = first == key[1]
                left_is_a = first_is_a == spec.first_on_left
                choice = _canonical_choice(spec.choice, first_is_a, spec.where)
            assignments.append(
                Assignment(
                    study=study,
                    item_id=item_id,
                    rater=rater,
                    status=Assignment.Status.SUBMITTED,
                    left_is_a=left_is_a,
                    hint_shown=spec.hint_shown,
                    is_repeat=repeat,
                    repeat_of_id=first_exposure.get((item_id, rater.id)) if repeat else None,
                    served_at=now,
                    submitted_at=now,
                )
            )
            payloads.append((spec, study, item_id, rater, choice))
        return assignments, payloads

    for repeat, rows in ((False, firsts), (True, repeats)):
        if not rows:
            continue
        assignments, payloads = build(rows, repeat=repeat)
        if repeat and any(a.repeat_of_id is None for a in assignments):
            raise ImportRefused("a repeated scoring has no first scoring to repeat")
        assignments = _batched_create(
            Assignment, assignments, enabled=progress_enabled, desc="assignments"
        )
        if any(a.pk is None for a in assignments):
            raise ImportRefused("the database backend did not return ids from a bulk insert")
        added["assignments"] += len(assignments)
        if not repeat:
            for a in assignments:
                first_exposure[(a.item_id, a.rater_id)] = a.pk
        ratings = [
            Rating(
                assignment=a,
                item_id=item_id,
                rater=rater,
                choice=choice,
                comment=spec.comment,
                created_at=now,
                updated_at=now,
            )
            for a, (spec, study, item_id, rater, choice) in zip(assignments, payloads, strict=True)
        ]
        ratings = _batched_create(Rating, ratings, enabled=progress_enabled, desc="ratings")
        added["ratings"] += len(ratings)
        scores = []
        for rating, (spec, study, _item, _rater, _choice) in zip(ratings, payloads, strict=True):
            for ckey, value in spec.scores.items():
                crit = criteria.get((study.rubric_id, ckey))
                if crit is None:
                    raise ImportRefused(
                        f"{spec.where}: rubric {study.rubric.key!r} has no criterion {ckey!r}"
                    )
                if not crit.min_score <= value <= crit.max_score:
                    raise ImportRefused(
                        f"{spec.where}: score {ckey}={value} is outside the rubric's range "
                        f"{crit.min_score}-{crit.max_score}"
                    )
                scores.append(Score(rating=rating, criterion=crit, value=value))
        _batched_create(Score, scores, enabled=progress_enabled, desc="scores")
        added["scores"] += len(scores)

    # Keep the items' counters true (first submitted ratings) and the target at the number of
    # raters who scored the study.
    for study in studies.values():
        first_count = (
            Assignment.objects.filter(
                item=OuterRef("pk"), is_repeat=False, status=Assignment.Status.SUBMITTED
            )
            .order_by()
            .values("item")
            .annotate(n=Count("id"))
            .values("n")
        )
        Item.objects.filter(study=study).update(n_ratings=Coalesce(Subquery(first_count), 0))
        n_raters = Assignment.objects.filter(study=study).values("rater").distinct().count() or 1
        if n_raters > study.ratings_per_item:
            Study.objects.filter(pk=study.pk).update(ratings_per_item=n_raters)


class _DryRun(Exception):
    pass


def run_import(
    *,
    format: str,
    paths: list[str | Path],
    parse: Callable[[RepairLog], Bundle],
    user=None,
    dry_run: bool = False,
    progress_enabled: bool = True,
) -> ImportResult:
    """Parse, then write everything in one transaction. A refusal writes nothing but a failed
    ImportRecord (kept outside the rolled-back transaction, so attempts stay visible)."""
    result = ImportResult(format=format, paths=[str(p) for p in paths], dry_run=dry_run)
    repairs = RepairLog()
    owner = user if getattr(user, "is_authenticated", False) else None
    try:
        bundle = parse(repairs)
        result.repairs = list(repairs)
        with transaction.atomic():
            write_bundle(bundle, result, owner=owner, progress_enabled=progress_enabled)
            if dry_run:
                raise _DryRun
            record = ImportRecord.objects.create(
                format=format,
                paths=[Path(p).name for p in paths],
                dataset_id=result.dataset_id,
                user=owner,
                ok=True,
                counts=result.counts(),
                repairs=[r.line() for r in result.repairs],
                message="\n".join(result.summary_lines()),
            )
            result.record_id = record.pk
    except _DryRun:
        pass
    except ImportRefused as exc:
        if not dry_run:
            ImportRecord.objects.create(
                format=format,
                paths=[Path(p).name for p in paths],
                user=owner,
                ok=False,
                message=str(exc),
                repairs=[r.line() for r in repairs],
            )
        raise
    return result


__all__ = [
    "Bundle",
    "ImportRefused",
    "ImportResult",
    "QuestionSpec",
    "RaterSpec",
    "RatingSpec",
    "RepairLog",
    "ResponseSpec",
    "StudySpec",
    "as_text",
    "check_score",
    "Bar",
    "progress",
    "run_import",
    "write_bundle",
]
