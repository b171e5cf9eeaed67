"""LLMEval-1 star scores: `data/分项测评_gpt4.csv`, long format
(id, question_uuid, llm_name, dialog_uuid, user_id, user_type, metric, score), GPT-4 scoring
five criteria with 1-3 stars.

The question and answer texts were not released. Questions and responses are created as
placeholders (empty text, `question.meta["placeholder"] = True`) so the scores can be analysed
(rankings, agreement with other raters); such items can never be served to annotators because the
imported-scores study is closed.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import annotation.importers.bundle as specs
from annotation.importers.base import ImportRefused, Options, RepairLog, check_score, progress
from annotation.importers.bundle import Place, place
from annotation.importers.bundle import message as _

DATASET = "LLMEval-1"
DESCRIPTION = (
    "LLMEval-1: 453 questions, 17 task types, 12 LLMs. Scores only: the "
    "question and answer texts were not released (placeholders with empty text)."
)
SOURCE = "github.com/llmeval/LLMEval-1"
STUDY = "LLMEval-1 (imported scores)"
JUDGE_RATER = "GPT-4 (LLMEval-1)"
COLUMNS = [
    "id",
    "question_uuid",
    "llm_name",
    "dialog_uuid",
    "user_id",
    "user_type",
    "metric",
    "score",
]
METRICS = {"accuracy", "informativeness", "fluency", "logicality", "harmlessness"}
PLACEHOLDER = {
    "placeholder": True,
    "note": "LLMEval-1 released scores only; the question and answer texts were not published.",
}


def _rater(path: Path, rater: str | None, rater_kind: str | None) -> specs.RaterSpec:
    if rater or rater_kind:
        if not (rater and rater_kind in ("human", "judge")):
            raise ImportRefused(_("--rater NAME needs --rater-kind human|judge (and vice versa)"))
        return specs.RaterSpec(rater, rater_kind, "judge" if rater_kind == "judge" else "onsite")
    if "gpt4" in path.name.lower() or "gpt-4" in path.name.lower():
        return specs.RaterSpec(JUDGE_RATER, "judge", "judge")
    raise ImportRefused(
        _(
            "%(file)s: cannot tell whose scores these are (no 'gpt4' in the name); "
            "pass --rater NAME --rater-kind human|judge",
            file=path.name,
        )
    )


def _rows(path: Path) -> list[list[str]]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ImportRefused(
            _("%(file)s: cannot read the file: %(error)s", file=path.name, error=exc)
        ) from exc
    if not rows or [c.strip() for c in rows[0]] != COLUMNS:
        if rows:
            got = ",".join(rows[0])
            raise ImportRefused(
                _(
                    "%(file)s: expected the header %(header)s, got %(got)s",
                    file=path.name,
                    header=",".join(COLUMNS),
                    got=got,
                )
            )
        raise ImportRefused(
            _(
                "%(file)s: expected the header %(header)s, got an empty file",
                file=path.name,
                header=",".join(COLUMNS),
            )
        )
    return rows


def _row(path: Path, line: int, row: list[str]) -> tuple[dict[str, str], int]:
    """One checked row and its score."""
    if len(row) != len(COLUMNS):
        raise ImportRefused(
            _(
                "%(where)s: expected %(n)s columns, got %(got)s",
                where=place(path.name, f"line {line}"),
                n=len(COLUMNS),
                got=len(row),
            )
        )
    rec = dict(zip(COLUMNS, (c.strip() for c in row), strict=True))
    rid = Place(f"line {line} (id %(id)s)", id=rec["id"])
    where = place(path.name, rid)
    for key in ("question_uuid", "llm_name", "metric", "score"):
        if not rec[key]:
            raise ImportRefused(_("%(where)s: %(key)s is empty", where=where, key=key))
    if rec["metric"] not in METRICS:
        raise ImportRefused(
            _("%(where)s: unknown metric %(metric)s", where=where, metric=f"{rec['metric']!r:.40}")
        )
    expected = f"{rec['llm_name']}_{rec['question_uuid']}"
    if rec["dialog_uuid"] != expected:
        raise ImportRefused(
            _(
                "%(where)s: dialog_uuid %(value)s does not match llm_name and question_uuid "
                "(%(expected)s)",
                where=where,
                value=f"{rec['dialog_uuid']!r:.60}",
                expected=repr(expected),
            )
        )
    score = check_score(rec["score"], lo=1, hi=3, criterion=rec["metric"], file=path, record=rid)
    return rec, score


def _by_dialog(path: Path, progress_enabled: bool) -> dict:
    """dialog (question, LLM) -> metric -> [(row id, score)] in file order."""
    rows = _rows(path)
    by_dialog: dict[tuple[str, str], dict[str, list[tuple[str, int]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    lines = progress(rows[1:], total=len(rows) - 1, desc=path.name, enabled=progress_enabled)
    for line, row in enumerate(lines, start=2):
        if not row or not any(c.strip() for c in row):
            continue
        rec, score = _row(path, line, row)
        key = (rec["question_uuid"], rec["llm_name"])
        by_dialog[key][rec["metric"]].append((rec["id"], score))
    return by_dialog


def _rounds(metrics: dict[str, list], where: str) -> int:
    """How many times the dialog was scored: every metric the same number of times, 1 or 2."""
    counts = {m: len(v) for m, v in metrics.items()}
    if set(counts) != METRICS:
        missing = ", ".join(sorted(METRICS - set(counts)))
        raise ImportRefused(
            _("%(where)s: missing score(s) for %(criteria)s", where=where, criteria=missing)
        )
    rounds = set(counts.values())
    if len(rounds) != 1:
        raise ImportRefused(
            _(
                "%(where)s: the criteria were scored a different number of times %(counts)s",
                where=where,
                counts=counts,
            )
        )
    n = rounds.pop()
    if n > 2:
        raise ImportRefused(_("%(where)s: scored %(n)s times", where=where, n=n))
    return n


def _note_second_scoring(repairs: RepairLog, path: Path, rid: str, metrics: dict) -> None:
    first = {m: metrics[m][0][1] for m in METRICS}
    second = {m: metrics[m][1][1] for m in METRICS}
    ids = ",".join(metrics[m][1][0] for m in sorted(METRICS))
    what = (
        "dialog scored twice with the same scores"
        if first == second
        else "dialog scored twice with different scores"
    )
    repairs.add(
        f"{what}: the second scoring (later rows) imported as a repeat rating "
        "(is_repeat, repeat_of the first)",
        path,
        f"{rid} ids {ids}",
    )


def _dialog(
    bundle: specs.Bundle, study_key: str, rater: specs.RaterSpec, key, metrics, path, repairs
):
    qid, llm = key
    rid = f"{llm}_{qid}"
    where = place(path.name, Place("dialog %(id)s", id=rid))
    n = _rounds(metrics, where)
    question = specs.QuestionSpec(
        external_id=qid, text="", task_type=qid.rsplit("_", 1)[0], meta=dict(PLACEHOLDER)
    )
    bundle.add_question(question, where=where)
    bundle.responses.append(
        specs.ResponseSpec(question=qid, llm=llm, text="", external_id=rid, where=where)
    )
    if n == 2:
        _note_second_scoring(repairs, path, rid, metrics)
    for round_ in range(n):
        bundle.ratings.append(
            specs.RatingSpec(
                study=study_key,
                rater=rater.name,
                question=qid,
                llm=llm,
                scores={m: metrics[m][round_][1] for m in sorted(METRICS)},
                repeat=bool(round_),
                where=where,
            )
        )


def parse(paths: list[Path], repairs: RepairLog, opts: Options) -> specs.Bundle:
    bundle = opts.bundle(DATASET, DESCRIPTION, SOURCE)
    study_key = opts.study or STUDY
    bundle.studies[study_key] = specs.StudySpec(
        name=study_key,
        mode="star",
        rubric="llmeval1",
        description="GPT-4 star scores released with LLMEval-1, imported.",
    )
    for path in map(Path, paths):
        rater_spec = _rater(path, opts.rater, opts.rater_kind)
        bundle.raters.setdefault(rater_spec.name, rater_spec)
        for key, metrics in _by_dialog(path, opts.progress).items():
            _dialog(bundle, study_key, rater_spec, key, metrics, path, repairs)
    return bundle
