"""The generic format for users' own data: JSONL (one object a line) or CSV (a header row), each
record typed by its `type` field: question, response, rating (star, one criterion a row or a
`scores` object in JSONL) or pairwise. docs/import-formats.md has the schema and examples.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from annotation.importers.alignbench import read_jsonl
from annotation.importers.base import (
    Bundle,
    ImportRefused,
    QuestionSpec,
    RaterSpec,
    RatingSpec,
    RepairLog,
    ResponseSpec,
    StudySpec,
    as_text,
    check_score,
    progress,
)

TYPES = ("question", "response", "rating", "pairwise")
FIELDS = {
    "question": {
        "question_id",
        "text",
        "task_type",
        "subcategory",
        "kind",
        "answer_type",
        "reference",
    },
    "response": {"question_id", "llm", "text", "response_id"},
    "rating": {
        "question_id",
        "llm",
        "rater",
        "rater_kind",
        "rater_pool",
        "criterion",
        "score",
        "scores",
        "hint_shown",
        "comment",
    },
    "pairwise": {
        "question_id",
        "llm_a",
        "llm_b",
        "rater",
        "rater_kind",
        "rater_pool",
        "choice",
        "left",
        "hint_shown",
        "comment",
    },
}
CHOICES = {"a": "first", "b": "second", "tie": "tie", "both_bad": "both_bad"}
TRUE = {"1", "true", "yes", "y", "t"}
FALSE = {"0", "false", "no", "n", "f", ""}


def _records(path: Path, fmt: str) -> list[tuple[str, dict]]:
    if fmt == "jsonl":
        out = []
        for number, rec in read_jsonl(path):
            if not isinstance(rec, dict):
                raise ImportRefused(f"{path.name}, line {number}: expected an object")
            out.append((f"line {number}", rec))
        return out
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            if not reader.fieldnames or "type" not in reader.fieldnames:
                raise ImportRefused(f"{path.name}: the CSV header needs a 'type' column")
            rows = []
            for number, row in enumerate(reader, start=2):
                if None in row:
                    raise ImportRefused(f"{path.name}, line {number}: more cells than columns")
                rows.append(
                    (f"line {number}", {k: v for k, v in row.items() if v not in (None, "")})
                )
            return rows
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ImportRefused(f"{path.name}: cannot read the CSV: {exc}") from exc


def _flag(value: Any, *, what: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise ImportRefused(f"{where}: {what} must be true or false, not {value!r}")


def _rater(rec: dict, where: str) -> RaterSpec:
    name = str(rec.get("rater") or "").strip()
    if not name:
        raise ImportRefused(f"{where}: rater is missing")
    kind = str(rec.get("rater_kind") or "human").strip()
    if kind not in ("human", "judge"):
        raise ImportRefused(f"{where}: rater_kind must be human or judge, not {kind!r}")
    pool = str(rec.get("rater_pool") or ("judge" if kind == "judge" else "onsite")).strip()
    if (kind == "judge") != (pool == "judge") or pool not in ("onsite", "crowd", "public", "judge"):
        raise ImportRefused(f"{where}: rater_pool {pool!r} does not fit rater_kind {kind!r}")
    return RaterSpec(name, kind, pool)


def parse(
    paths: list[Path],
    repairs: RepairLog,
    *,
    fmt: str,
    dataset: str | None = None,
    study: str | None = None,
    rubric: str | None = None,
    progress_enabled: bool = True,
    **_ignored,
) -> Bundle:
    from annotation.models import Rubric

    if not dataset:
        raise ImportRefused("the generic formats need --dataset NAME")
    bundle = Bundle(dataset=dataset, dataset_source="import")
    star_key = study or f"{dataset} (imported ratings)"
    pair_key = f"{study} (pairwise)" if study else f"{dataset} (imported pairwise ratings)"
    ranges: dict[str, tuple[int, int]] = {}
    star_ratings: dict[tuple[str, str, str], RatingSpec] = {}

    for path in map(Path, paths):
        records = _records(path, fmt)
        for rid, rec in progress(
            records, total=len(records), desc=path.name, enabled=progress_enabled
        ):
            where = f"{path.name}, {rid}"
            kind = str(rec.get("type") or "").strip()
            if kind not in TYPES:
                raise ImportRefused(
                    f"{where}: type must be one of {', '.join(TYPES)}, not {kind!r}"
                )
            for key in sorted(set(rec) - FIELDS[kind] - {"type"}):
                repairs.add(f"ignored the unknown field {key!r} on a {kind} record", path, rid)
            qid = str(rec.get("question_id") or "").strip()
            if not qid:
                raise ImportRefused(f"{where}: question_id is missing")

            def text(
                key: str, *, required: bool = False, _rec=rec, _where=where, _rid=rid, _path=path
            ) -> str:
                value = _rec.get(key)
                if value in (None, ""):
                    if required:
                        raise ImportRefused(f"{_where}: {key} is missing")
                    return ""
                return as_text(value, what=key, file=_path, record=_rid, repairs=repairs)

            if kind == "question":
                qkind = text("kind")
                if qkind not in ("", "objective", "subjective"):
                    raise ImportRefused(f"{where}: kind must be objective, subjective or empty")
                bundle.add_question(
                    QuestionSpec(
                        external_id=qid,
                        text=text("text", required=True),
                        task_type=text("task_type"),
                        subcategory=text("subcategory"),
                        kind=qkind,
                        answer_type=text("answer_type"),
                        reference=text("reference"),
                    ),
                    where=where,
                )
            elif kind == "response":
                bundle.responses.append(
                    ResponseSpec(
                        question=qid,
                        llm=text("llm", required=True),
                        text=text("text", required=True),
                        external_id=text("response_id"),
                        where=where,
                    )
                )
            elif kind == "rating":
                if not rubric:
                    raise ImportRefused(f"{where}: star ratings need --rubric KEY")
                if not ranges:
                    r = Rubric.objects.filter(key=rubric, mode="star").first()
                    if r is None:
                        raise ImportRefused(f"unknown star rubric {rubric!r}")
                    ranges = {c.key: (c.min_score, c.max_score) for c in r.criteria.all()}
                    bundle.studies[star_key] = StudySpec(name=star_key, mode="star", rubric=rubric)
                rater = _rater(rec, where)
                bundle.raters.setdefault(rater.name, rater)
                llm = text("llm", required=True)
                scores = rec.get("scores")
                if scores is None:
                    crit = text("criterion", required=True)
                    scores = {crit: rec.get("score")}
                if not isinstance(scores, dict) or not scores:
                    raise ImportRefused(f"{where}: scores must be an object of criterion: value")
                key = (qid, llm, rater.name)
                spec = star_ratings.get(key)
                if spec is None:
                    spec = RatingSpec(
                        study=star_key,
                        rater=rater.name,
                        question=qid,
                        llm=llm,
                        hint_shown=_flag(
                            rec.get("hint_shown", False), what="hint_shown", where=where
                        ),
                        comment=text("comment"),
                        where=where,
                    )
                    star_ratings[key] = spec
                    bundle.ratings.append(spec)
                for crit, value in scores.items():
                    if crit not in ranges:
                        raise ImportRefused(f"{where}: rubric {rubric!r} has no criterion {crit!r}")
                    if crit in spec.scores:
                        raise ImportRefused(
                            f"{where}: a second score for {crit!r} by {rater.name!r} on this answer"
                        )
                    lo, hi = ranges[crit]
                    spec.scores[crit] = check_score(
                        value, lo=lo, hi=hi, criterion=crit, file=path, record=rid
                    )
            else:  # pairwise
                bundle.studies.setdefault(
                    pair_key, StudySpec(name=pair_key, mode="pairwise", rubric="pairwise")
                )
                rater = _rater(rec, where)
                bundle.raters.setdefault(rater.name, rater)
                a, b = text("llm_a", required=True), text("llm_b", required=True)
                if a == b:
                    raise ImportRefused(f"{where}: llm_a and llm_b are the same model")
                choice = CHOICES.get(text("choice", required=True).strip().lower())
                if choice is None:
                    raise ImportRefused(f"{where}: choice must be a, b, tie or both_bad")
                left = text("left") or a
                if left not in (a, b):
                    raise ImportRefused(f"{where}: left must name llm_a or llm_b")
                bundle.ratings.append(
                    RatingSpec(
                        study=pair_key,
                        rater=rater.name,
                        question=qid,
                        llm=a,
                        other_llm=b,
                        choice=choice,
                        first_on_left=left == a,
                        hint_shown=_flag(
                            rec.get("hint_shown", False), what="hint_shown", where=where
                        ),
                        comment=text("comment"),
                        where=where,
                    )
                )
    return bundle
