"""A study in the generic import format (docs/import-formats.md): its questions, the responses
its items show and every rating with its exposure, as the records `import_dataset --format
jsonl|csv` reads. Export -> import into a fresh database -> export gives the same file.

Nothing in it depends on database ids: records are ordered by natural keys (ratings by submitted
time, then rater, question and models), a pair is written with its two models in name order, and
a rater is written by name where it has one of its own (imported and judge raters) and by
pseudonym otherwise (annotators with an account or a worker id: organizers never see those).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.db.models import Q

from annotation.importers.generic import FIELDS
from annotation.models import Item, ParseStatus, Rater, Rating, Response, Rubric, Score, Study
from evaluation.selectors import unparsed_judge_outputs

CSV_COLUMNS = list(dict.fromkeys(["type", *(c for f in FIELDS.values() for c in f)]))
CSV_COLUMNS.remove("scores")
_CHOICE = {"A": "a", "B": "b", "tie": "tie", "both_bad": "both_bad", "": ""}


def _time(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.UTC).isoformat() if value else None


def _questions(study: Study) -> Iterator[dict[str, Any]]:
    ids = Item.objects.filter(study=study).values("question_id")
    qs = study.dataset.questions.filter(id__in=ids).order_by("external_id")
    for q in qs.iterator(chunk_size=2000):
        yield {
            "type": "question",
            "question_id": q.external_id,
            "text": q.text,
            "task_type": q.task_type,
            "subcategory": q.subcategory,
            "kind": q.kind,
            "answer_type": q.answer_type,
            "reference": q.reference,
        }


def _responses(study: Study) -> Iterator[dict[str, Any]]:
    items = Item.objects.filter(study=study)
    ids = set(items.values_list("response_a_id", flat=True))
    ids |= set(items.exclude(response_b=None).values_list("response_b_id", flat=True))
    rows = Response.objects.filter(id__in=ids).order_by("question__external_id", "llm__name")
    for q, llm, text, ext in rows.values_list(
        "question__external_id", "llm__name", "text", "external_id"
    ).iterator(chunk_size=2000):
        yield {"type": "response", "question_id": q, "llm": llm, "text": text, "response_id": ext}


def _rater_labels(study: Study, extra: set[int]) -> dict[int, dict[str, str]]:
    """Labels of the study's raters, and of the raters in ``extra`` (judges with unparsed
    outputs only)."""
    out = {}
    raters = Rater.objects.filter(Q(ratings__item__study=study) | Q(pk__in=extra)).distinct()
    for r in raters:
        own_name = r.name and r.user_id is None and not r.external_id
        out[r.pk] = {
            "rater": r.name if own_name else r.pseudonym,
            "rater_kind": r.kind,
            "rater_pool": r.pool,
            "rater_platform": r.platform,
        }
    return out


def _scores(study: Study) -> dict[int, list[tuple[str, int, bool]]]:
    out: dict[int, list[tuple[str, int, bool]]] = defaultdict(list)
    rows = Score.objects.filter(rating__item__study=study).order_by(
        "rating_id", "criterion__order", "criterion__key"
    )
    for rid, key, value, flagged in rows.values_list(
        "rating_id", "criterion__key", "value", "out_of_range"
    ).iterator(chunk_size=5000):
        out[rid].append((key, value, flagged))
    return out


RATING_VALUES = (
    "id",
    "rater_id",
    "choice",
    "comment",
    "parse_status",
    "raw_output",
    "assignment__hint_shown",
    "assignment__is_repeat",
    "assignment__left_is_a",
    "assignment__served_at",
    "assignment__submitted_at",
    "assignment__active_ms",
    "item__question__external_id",
    "item__response_a__llm__name",
    "item__response_b__llm__name",
)


def _exposure(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "hint_shown": r["assignment__hint_shown"],
        "is_repeat": r["assignment__is_repeat"],
        "served_at": _time(r["assignment__served_at"]),
        "submitted_at": _time(r["assignment__submitted_at"]),
        "active_ms": r["assignment__active_ms"],
        "comment": r["comment"],
        "parse_status": r["parse_status"],
        "raw_output": r["raw_output"],
    }


def _pair_fields(r: dict[str, Any]) -> dict[str, Any]:
    """The pair in model-name order (ids differ between databases); choice and left follow."""
    a, b = r["item__response_a__llm__name"], r["item__response_b__llm__name"]
    choice = _CHOICE[r["choice"]]
    left = a if r["assignment__left_is_a"] else b
    if b < a:
        a, b = b, a
        choice = {"a": "b", "b": "a"}.get(choice, choice)
    return {"llm_a": a, "llm_b": b, "choice": choice, "left": left}


def _rating_record(r: dict, rater: dict, scores: list, pairwise: bool) -> dict[str, Any]:
    head = {
        "type": "pairwise" if pairwise else "rating",
        "question_id": r["item__question__external_id"],
    }
    if pairwise:
        pair = _pair_fields(r)
        body = {"llm_a": pair["llm_a"], "llm_b": pair["llm_b"], **rater}
        body |= {"choice": pair["choice"], "left": pair["left"]}
    else:
        body = {"llm": r["item__response_a__llm__name"], **rater}
        body["scores"] = {k: v for k, v, _ in scores}
        body["out_of_range"] = [k for k, _, flagged in scores if flagged]
    return head | body | _exposure(r)


def _sort_key(rec: dict[str, Any]) -> tuple:
    return (
        rec["submitted_at"] or "",
        rec["rater"],
        rec["question_id"],
        rec.get("llm") or "",
        rec.get("llm_a") or "",
        rec.get("llm_b") or "",
        rec["is_repeat"],
    )


def _unparsed_calls(study: Study) -> list[dict[str, Any]]:
    """Live judge outputs that could not be parsed, shaped as ``RATING_VALUES`` rows: they are
    written as unparsed ratings, as an imported unparsed output is (and re-imported as one)."""
    calls = unparsed_judge_outputs(study)
    items = {
        row[0]: row[1:]
        for row in Item.objects.filter(pk__in={c["item_id"] for c in calls}).values_list(
            "pk",
            "question__external_id",
            "response_a__llm__name",
            "response_b__llm__name",
        )
    }
    return [
        {
            "id": None,
            "rater_id": c["rater_id"],
            "choice": "",
            "comment": "",
            "parse_status": ParseStatus.UNPARSED.value,
            "raw_output": c["raw_output"],
            "assignment__hint_shown": c["hint_shown"],
            "assignment__is_repeat": c["is_repeat"],
            "assignment__left_is_a": c["left_is_a"],
            "assignment__served_at": c["started_at"] or c["finished_at"],
            "assignment__submitted_at": c["finished_at"],
            "assignment__active_ms": c["latency_ms"],
            "item__question__external_id": items[c["item_id"]][0],
            "item__response_a__llm__name": items[c["item_id"]][1],
            "item__response_b__llm__name": items[c["item_id"]][2],
        }
        for c in calls
    ]


def _ratings(study: Study) -> list[dict[str, Any]]:
    pairwise = study.mode == Rubric.Mode.PAIRWISE
    calls = _unparsed_calls(study)
    raters = _rater_labels(study, {c["rater_id"] for c in calls})
    scores = _scores(study)
    rows = Rating.objects.filter(item__study=study).values(*RATING_VALUES)
    records = [
        _rating_record(r, raters[r["rater_id"]], scores.get(r["id"], []), pairwise)
        for r in [*rows.iterator(chunk_size=4000), *calls]
    ]
    return sorted(records, key=_sort_key)


def generic_records(study: Study) -> Iterator[dict[str, Any]]:
    """Questions, responses, then ratings: the JSONL records, every field always present."""
    yield from _questions(study)
    yield from _responses(study)
    yield from _ratings(study)


def generic_csv_rows(records) -> Iterator[dict[str, Any]]:
    """The same records as CSV rows: a star rating gives one row per criterion (one row with no
    criterion when it has no score: an unparsed judge output)."""
    for rec in records:
        if rec["type"] != "rating":
            yield rec
            continue
        base = {k: v for k, v in rec.items() if k not in ("scores", "out_of_range")}
        flagged = set(rec["out_of_range"])
        for crit, value in rec["scores"].items() or [("", None)]:
            yield base | {"criterion": crit, "score": value, "out_of_range": crit in flagged}
