"""Quality checks of a study: gold items (a known answer) and attention checks (the text tells the
annotator what to answer). One service for the organizer page and the API.

An accepted answer is stored on ``Item.check_answer`` in canonical orientation:
pairwise ``{"choices": ["A", "tie"]}`` (A is the item's response_a); star
``{"scores": {"<criterion key>": [min, max]}}``.

Gold marks arrive as records (from CSV, JSON or a form), each naming an item by ``item_id`` or by
``question_id`` and ``model`` (star) / ``model_a`` and ``model_b`` (pairwise). When the organizer
names the models in the other order than the item stores them, A and B are swapped, so "A" always
means the response of the model named ``model_a``. Every record is checked before anything is
written: one bad line refuses the whole upload, with every error and its line number.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from annotation import inputs
from annotation.models import LLM, Criterion, Item, PairChoice, Question, Response, Rubric, Study

# Reserved model names of attention checks' answers: never a real model, and the item builder
# leaves them out of new studies.
ATTENTION_LLMS = ("[attention check] A", "[attention check] B")
MAX_RECORDS = 5000
MAX_TEXT = 20000
MAX_CELL = 500
_INT = re.compile(r"[0-9]{1,9}")  # ASCII digits only: int() would accept '٣'
_SWAP = {"A": "B", "B": "A"}


@dataclass(frozen=True)
class GoldMark:
    item_id: int
    answer: dict[str, Any]


def _text(value: Any, what: str, *, limit: int = MAX_CELL) -> str:
    if value is None:
        return ""
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ValidationError(_("%(what)s must be text.") % {"what": what})
    text = str(value).strip()
    if "\x00" in text:
        raise ValidationError(_("%(what)s contains a NUL byte.") % {"what": what})
    if len(text) > limit:
        raise ValidationError(
            _("%(what)s is longer than %(n)d characters.") % {"what": what, "n": limit}
        )
    return text


def _int(value: Any, what: str) -> int:
    text = _text(value, what)
    if not _INT.fullmatch(text):
        raise ValidationError(_("%(what)s must be a whole number.") % {"what": what})
    return int(text)


def choices_clean(value: Any) -> list[str]:
    """Accepted pairwise choices: a list or "A|tie" text of PairChoice values, at least one."""
    if isinstance(value, str):
        value = [v for v in re.split(r"[|,;\s]+", value) if v]
    if not isinstance(value, list) or not value or len(value) > len(PairChoice.values):
        raise ValidationError(_("Give the accepted choices, e.g. A or A|tie."))
    valid = set(PairChoice.values)
    bad = [str(v)[:20] for v in value if v not in valid]
    if bad:
        raise ValidationError(
            _("Unknown choice %(bad)s: use %(valid)s.")
            % {"bad": ", ".join(bad), "valid": ", ".join(PairChoice.values)}
        )
    return sorted(set(value), key=PairChoice.values.index)


def _range(value: Any, criterion: Criterion) -> list[int]:
    if isinstance(value, str):
        parts = [p for p in re.split(r"\s*-\s*", value.strip()) if p != ""]
    elif isinstance(value, list):
        parts = value
    else:
        parts = [value]
    if len(parts) == 1:
        parts = parts * 2
    if len(parts) != 2:
        raise ValidationError(
            _("%(key)s: give a star or a range such as 4-5.") % {"key": criterion.key}
        )
    lo, hi = (_int(p, criterion.key) for p in parts)
    if not criterion.min_score <= lo <= hi <= criterion.max_score:
        raise ValidationError(
            _("%(key)s: the range must lie within %(lo)d-%(hi)d, low end first.")
            % {"key": criterion.key, "lo": criterion.min_score, "hi": criterion.max_score}
        )
    return [lo, hi]


def scores_clean(study: Study, value: Any) -> dict[str, list[int]]:
    """Accepted star ranges per criterion key, each within the criterion's scale."""
    if not isinstance(value, dict) or not value:
        raise ValidationError(_("Give the accepted stars of at least one criterion."))
    criteria = {c.key: c for c in Criterion.objects.filter(rubric_id=study.rubric_id)}
    unknown = [str(k)[:40] for k in value if k not in criteria]
    if unknown:
        raise ValidationError(
            _("Unknown criteria: %(keys)s. This study's criteria: %(known)s.")
            % {"keys": ", ".join(unknown[:5]), "known": ", ".join(criteria)}
        )
    return {key: _range(v, criteria[key]) for key, v in value.items()}


def answer_clean(study: Study, answer: Any) -> dict[str, Any]:
    """The accepted answer in its stored form, or ValidationError."""
    if not isinstance(answer, dict):
        raise ValidationError(_("The accepted answer must be an object."))
    if study.mode == Rubric.Mode.PAIRWISE:
        return {"choices": choices_clean(answer.get("choices"))}
    return {"scores": scores_clean(study, answer.get("scores"))}


def records_parse(text: str, *, fmt: str) -> list[dict[str, Any]]:
    """Raw gold records from an upload: JSON (a list of objects) or CSV with a header
    (item_id | question_id + model / model_a + model_b; choices; one column per criterion key)."""
    if "\x00" in text:
        raise ValidationError(_("The file contains a NUL byte."))
    if fmt == "json":
        try:
            data = inputs.json_loads(text)
        except ValueError as e:
            raise ValidationError(inputs.json_error(e)) from e
        if isinstance(data, dict):
            data = data.get("items")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise ValidationError(_('JSON must be a list of objects (or {"items": [...]}).'))
        records = data
    elif fmt == "csv":
        try:
            records = [
                {k: v for k, v in row.items() if k and v not in (None, "")}
                for row in csv.DictReader(io.StringIO(text))
            ]
        except csv.Error as e:
            raise ValidationError(_("Not valid CSV: %(e)s") % {"e": str(e)[:200]}) from e
    else:
        raise ValidationError(_("Unknown format: use csv or json."))
    if not records:
        raise ValidationError(_("The file holds no records."))
    if len(records) > MAX_RECORDS:
        raise ValidationError(_("At most %(n)d records per upload.") % {"n": MAX_RECORDS})
    return records


_ID_KEYS = {"item_id", "question_id", "model", "model_a", "model_b", "choices", "scores"}


def _answer_of(study: Study, record: dict[str, Any]) -> dict[str, Any]:
    if study.mode == Rubric.Mode.PAIRWISE:
        return {"choices": record.get("choices")}
    scores = record.get("scores")
    if scores is None:  # CSV: one column per criterion key
        scores = {k: v for k, v in record.items() if k not in _ID_KEYS}
    return {"scores": scores}


def _item_index(study: Study, records: list[dict[str, Any]]) -> dict[tuple, int]:
    qids = {str(r.get("question_id"))[:MAX_CELL] for r in records if r.get("question_id")}
    items = Item.objects.filter(study=study, question__external_id__in=qids).values_list(
        "id", "question__external_id", "response_a__llm__name", "response_b__llm__name"
    )
    return {(q, a, b or ""): i for i, q, a, b in items}


def _resolve(study: Study, record: dict[str, Any], index: dict[tuple, int]) -> tuple[int, bool]:
    """(item id, swapped?) of one record."""
    if record.get("item_id") not in (None, ""):
        item_id = _int(record["item_id"], "item_id")
        if (
            not Item.objects.filter(study=study, pk=item_id)
            .exclude(check_kind="attention")
            .exists()
        ):
            raise ValidationError(_("No item %(id)d in this study.") % {"id": item_id})
        return item_id, False
    qid = _text(record.get("question_id"), "question_id")
    if study.mode != Rubric.Mode.PAIRWISE:
        key = (qid, _text(record.get("model"), "model"), "")
        if key in index:
            return index[key], False
    else:
        a, b = _text(record.get("model_a"), "model_a"), _text(record.get("model_b"), "model_b")
        if (qid, a, b) in index:
            return index[(qid, a, b)], False
        if (qid, b, a) in index:
            return index[(qid, b, a)], True
    raise ValidationError(_("No item of question %(q)s with those models.") % {"q": qid[:60]})


def marks_resolve(study: Study, records: list[dict[str, Any]]) -> list[GoldMark]:
    """Every record checked (item found, answer valid); ValidationError lists each bad line."""
    index = _item_index(study, records)
    marks: dict[int, GoldMark] = {}
    errors: list[str] = []
    for line, record in enumerate(records, start=1):
        try:
            item_id, swapped = _resolve(study, record, index)
            answer = answer_clean(study, _answer_of(study, record))
        except ValidationError as e:
            errors.extend(f"{_('record')} {line}: {m}" for m in e.messages)
            continue
        if swapped:
            answer["choices"] = sorted(
                {_SWAP.get(c, c) for c in answer["choices"]}, key=PairChoice.values.index
            )
        marks[item_id] = GoldMark(item_id, answer)
    if errors:
        raise ValidationError(errors[:50])
    return list(marks.values())


@transaction.atomic
def gold_mark(*, study: Study, marks: list[GoldMark]) -> int:
    """Make the items gold with their accepted answers; returns how many."""
    items = Item.objects.select_for_update().filter(study=study, pk__in=[m.item_id for m in marks])
    by_id = {m.item_id: m for m in marks}
    changed = []
    for item in items:
        item.check_kind = Item.CheckKind.GOLD
        item.check_answer = by_id[item.pk].answer
        changed.append(item)
    Item.objects.bulk_update(changed, ["check_kind", "check_answer"])
    return len(changed)


def gold_upload(*, study: Study, text: str, fmt: str) -> int:
    """Parse, check and write a gold upload: all of it or nothing."""
    return gold_mark(study=study, marks=marks_resolve(study, records_parse(text, fmt=fmt)))


def gold_unmark(*, study: Study, item_id: int) -> None:
    """A gold item becomes a regular item again (its ratings count for the models again)."""
    n = Item.objects.filter(study=study, pk=item_id, check_kind=Item.CheckKind.GOLD).update(
        check_kind="", check_answer={}
    )
    if not n:
        raise ValidationError(_("No gold item %(id)d in this study.") % {"id": item_id})


@transaction.atomic
def attention_check_create(
    *,
    study: Study,
    instruction: str,
    answer: Any,
    text_a: str,
    text_b: str = "",
    reference: str = "",
) -> Item:
    """An attention check: a question in the study's dataset whose text is the organizer's
    instruction, answered by reserved "[attention check]" models (text_a and, pairwise, text_b),
    and an item with check_kind "attention" and the accepted answer (A is text_a). `reference`
    is the question's reference answer, shown when an exposure shows hints: where the study's
    questions all have one, a check without one would be the item without a reference card."""
    instruction = _text(instruction, _("Instruction"), limit=MAX_TEXT)
    reference = _text(reference, _("Reference answer"), limit=MAX_TEXT)
    text_a = _text(text_a, _("Answer A"), limit=MAX_TEXT)
    text_b = _text(text_b, _("Answer B"), limit=MAX_TEXT)
    pairwise = study.mode == Rubric.Mode.PAIRWISE
    if not instruction or not text_a or (pairwise and not text_b):
        raise ValidationError(_("Write the instruction and the answer text(s)."))
    answer = answer_clean(study, answer)
    n = Item.objects.filter(study=study, check_kind=Item.CheckKind.ATTENTION).count() + 1
    question = Question.objects.create(
        dataset=study.dataset,
        external_id=f"attention-check-{study.public_id}-{n}",
        text=instruction,
        reference=reference,
        meta={"check_kind": "attention", "study": study.public_id},
    )
    responses = [
        Response.objects.create(
            question=question, llm=LLM.objects.get_or_create(name=name)[0], text=text
        )
        for name, text in zip(
            ATTENTION_LLMS, (text_a, text_b) if pairwise else (text_a,), strict=False
        )
    ]
    return Item.objects.create(
        study=study,
        question=question,
        response_a=responses[0],
        response_b=responses[1] if pairwise else None,
        check_kind=Item.CheckKind.ATTENTION,
        check_answer=answer,
    )


def check_items(study: Study):
    """The study's gold items and attention checks, with their question and models."""
    return (
        Item.objects.filter(study=study)
        .exclude(check_kind="")
        .select_related("question", "response_a__llm", "response_b__llm")
        .order_by("check_kind", "id")
    )


def stars_example(study: Study) -> str:
    """An example of accepted stars in the study's own criteria and ranges, e.g.
    "correctness=2-3, explanation_correctness=2" (empty for a rubric without criteria)."""
    criteria = list(study.rubric.criteria.all()[:2])
    parts = [f"{c.key}={max(c.min_score, c.max_score - 1)}-{c.max_score}" for c in criteria[:1]]
    return ", ".join(parts + [f"{c.key}={c.max_score}" for c in criteria[1:]])


def scores_from_text(text: str, *, example: str = "") -> dict[str, str]:
    """Star ranges typed in a form: "accuracy=4-5, fluency=3" (commas or new lines)."""
    text = _text(text, _("Accepted stars"))
    pairs = [p.strip() for p in re.split(r"[,\n;]+", text) if p.strip()]
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            said = _("Write each criterion as key=stars or key=low-high, e.g. %(example)s.")
            raise ValidationError(said % {"example": example or "accuracy=4-5"})
        out[key.strip()] = value.strip()
    return out


@transaction.atomic
def check_remove(*, study: Study, item_id: int) -> str:
    """Undo a check: a gold item becomes regular again; an attention check nobody has seen is
    deleted with its question. One that was served stays (its ratings are raw data)."""
    item = (
        Item.objects.select_for_update()
        .filter(study=study, pk=item_id)
        .exclude(check_kind="")
        .first()
    )
    if item is None:
        raise ValidationError(_("No check item %(id)d in this study.") % {"id": item_id})
    if item.check_kind == Item.CheckKind.GOLD:
        gold_unmark(study=study, item_id=item.pk)
        return "unmarked"
    if item.assignments.exists():
        raise ValidationError(
            _("This attention check was already served; it stays with its ratings.")
        )
    question = item.question
    item.delete()
    Response.objects.filter(question=question).delete()
    question.delete()
    return "deleted"
