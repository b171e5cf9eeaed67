"""LLMEval-2: `data/<Subject>_data.json` (questions and answers) and the score files
`results/human-score/*.json`, `results/gpt-score/*.json` (the same records plus `stars`).

Each file is a JSON list of {question_uuid, dialog_uuid, llm_name, dialog: [{role: user, content},
{role: llm, content}], hint, type} with type A = objective, B = subjective.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import annotation.importers.bundle as specs
from annotation.importers.base import Bar, ImportRefused, Options, RepairLog, as_text, check_score
from annotation.importers.bundle import Place, place
from annotation.importers.bundle import message as _
from annotation.importers.reading import read_json

DATASET = "LLMEval-2"
DESCRIPTION = "LLMEval-2: 12 subjects x 40 questions, answers of 20 LLMs (Chinese)."
SOURCE = "github.com/llmeval/llmeval-2"
STUDY = "LLMEval-2 (imported scores)"
HUMAN_RATER = "LLMEval-2 human panel"
JUDGE_RATER = "GPT-4 (LLMEval-2)"
KINDS = {"A": "objective", "B": "subjective"}
# Names in the files' `stars` -> criterion keys of the built-in llmeval2 rubric.
CRITERIA = {
    "Correctness": "correctness",
    "Explanation Correctness": "explanation_correctness",
    "Accuracy": "accuracy",
    "Informativeness": "informativeness",
    "Fluency": "fluency",
    "Logicality": "logicality",
    "Logical Coherence": "logicality",
}
RANGES = {
    "correctness": (1, 3),
    "explanation_correctness": (1, 2),
    "accuracy": (1, 5),
    "informativeness": (1, 3),
    "fluency": (1, 3),
    "logicality": (1, 3),
}
BY_KIND = {
    "objective": {"correctness", "explanation_correctness"},
    "subjective": {"accuracy", "informativeness", "fluency", "logicality"},
}
KNOWN_KEYS = {"question_uuid", "dialog_uuid", "llm_name", "dialog", "hint", "type", "stars"}


def subject_of(path: Path) -> str:
    stem = path.stem
    if not stem.endswith("_data"):
        raise ImportRefused(
            _(
                "%(file)s: LLMEval-2 files are named <Subject>_data.json (the subject is the "
                "task type)",
                file=path.name,
            )
        )
    return stem[: -len("_data")].replace("_", " ")


def rater_for(path: Path, rater: str | None, rater_kind: str | None) -> specs.RaterSpec:
    if rater or rater_kind:
        if not (rater and rater_kind in ("human", "judge")):
            raise ImportRefused(_("--rater NAME needs --rater-kind human|judge (and vice versa)"))
        return specs.RaterSpec(
            name=rater, kind=rater_kind, pool="judge" if rater_kind == "judge" else "onsite"
        )
    parts = {p.lower() for p in path.parts}
    if "human-score" in parts:
        return specs.RaterSpec(name=HUMAN_RATER, kind="human", pool="onsite")
    if "gpt-score" in parts:
        return specs.RaterSpec(name=JUDGE_RATER, kind="judge", pool="judge")
    raise ImportRefused(
        _(
            "%(file)s: cannot tell whose scores these are (the path has neither human-score nor "
            "gpt-score); pass --rater NAME --rater-kind human|judge",
            file=path.name,
        )
    )


def load_list(path: Path) -> list:
    data = read_json(path)
    if not isinstance(data, list):
        raise ImportRefused(
            _(
                "%(file)s: expected a JSON list of records, got %(type)s",
                file=path.name,
                type=type(data).__name__,
            )
        )
    return data


@dataclass
class _Dialog:
    """One record's fields, checked."""

    qid: str
    llm: str
    kind: str
    question: str
    answer: str
    hint: str
    dialog_uuid: str
    rid: str  # "<question>/<llm>" for repair lists
    where: str  # "file, record N (question, LLM)" for messages


@dataclass
class _State:
    bundle: specs.Bundle
    repairs: RepairLog
    scores: bool
    study_key: str
    # Prompts per question: the models were not always shown the same wording.
    prompts: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    records: dict[tuple[str, str], tuple[str, tuple]] = field(default_factory=dict)
    answers: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)


def _turns(rec: dict, where: str) -> tuple[Any, Any]:
    dialog = rec["dialog"]
    if not isinstance(dialog, list):
        raise ImportRefused(_("%(where)s: dialog must be a list of turns", where=where))
    turns: dict[str, list] = {"user": [], "llm": []}
    for turn in dialog:
        role = turn.get("role") if isinstance(turn, dict) else None
        if role not in turns:
            raise ImportRefused(
                _(
                    "%(where)s: a dialog turn has the role %(role)s",
                    where=where,
                    role=f"{role!r:.40}",
                )
            )
        turns[role].append(turn.get("content"))
    if len(turns["user"]) != 1 or len(turns["llm"]) != 1:
        raise ImportRefused(
            _(
                "%(where)s: expected one user turn and one llm turn, found %(user)s and %(llm)s",
                where=where,
                user=len(turns["user"]),
                llm=len(turns["llm"]),
            )
        )
    return turns["user"][0], turns["llm"][0]


def _dialog_uuid(rec: dict, d: _Dialog, path: Path, repairs: RepairLog) -> str:
    dialog_uuid = rec.get("dialog_uuid")
    expected = f"{d.llm}_{d.qid}"
    if not isinstance(dialog_uuid, str) or not dialog_uuid:
        repairs.add("dialog_uuid missing, rebuilt as <llm_name>_<question_uuid>", path, d.rid)
        return expected
    if dialog_uuid != expected and expected.startswith(dialog_uuid):
        repairs.add("dialog_uuid truncated, rebuilt as <llm_name>_<question_uuid>", path, d.rid)
        return expected
    return dialog_uuid


def _read(rec: Any, path: Path, index: int, repairs: RepairLog) -> _Dialog:
    rid = f"record {index}"
    if not isinstance(rec, dict):
        raise ImportRefused(
            _(
                "%(where)s: expected an object, got %(type)s",
                where=place(path.name, rid),
                type=type(rec).__name__,
            )
        )
    for key in ("question_uuid", "llm_name", "dialog", "type"):
        if key not in rec or rec[key] in (None, ""):
            raise ImportRefused(
                _(
                    "%(where)s: the field %(key)s is missing",
                    where=place(path.name, rid),
                    key=repr(key),
                )
            )

    def text(value: Any, what: str, record: str) -> str:
        return as_text(value, what=what, file=path, record=record, repairs=repairs)

    qid, llm = (
        text(rec["question_uuid"], "question_uuid", rid),
        text(rec["llm_name"], "llm_name", rid),
    )
    part = Place(f"record {index} (question %(qid)s, LLM %(llm)s)", qid=qid, llm=llm)
    where, rid = place(path.name, part), f"{qid}/{llm}"
    if not KNOWN_KEYS.issuperset(rec):
        for key in sorted(set(rec) - KNOWN_KEYS):
            repairs.add(f"ignored the unknown field {key!r}", path, rid)
    if rec["type"] not in KINDS:
        raise ImportRefused(
            _(
                "%(where)s: type must be 'A' or 'B', not %(value)s",
                where=where,
                value=f"{rec['type']!r:.40}",
            )
        )
    question, answer = _turns(rec, where)
    question = text(question, "the question (user turn)", rid)
    if not question or question.isspace():
        raise ImportRefused(_("%(where)s: the question text is empty", where=where))
    hint = rec.get("hint")
    d = _Dialog(
        qid=qid,
        llm=llm,
        kind=KINDS[rec["type"]],
        question=question,
        answer=_answer(answer, path, rid, repairs),
        hint="" if hint is None else text(hint, "hint", rid),
        dialog_uuid="",
        rid=rid,
        where=where,
    )
    d.dialog_uuid = _dialog_uuid(rec, d, path, repairs)
    return d


def _answer(value: Any, path: Path, rid: str, repairs: RepairLog) -> str:
    """The model's answer; an empty one (or null, no text at all) is imported as an empty
    answer and flagged: it is what the model returned."""
    if value is None:
        value = ""
    answer = as_text(value, what="the answer (llm turn)", file=path, record=rid, repairs=repairs)
    if not answer or answer.isspace():  # no copy of a long answer
        repairs.flag("empty answer: imported as given (length 0 if null or empty)", path, rid)
    return answer


def _is_duplicate(state: _State, d: _Dialog, rec: dict, path: Path) -> bool:
    """A record repeated in the same file: dropped when identical, refused otherwise."""
    key = (d.qid, d.llm)
    snapshot = (d.question, d.answer, d.hint, d.kind, rec.get("stars") if state.scores else None)
    if key in state.records:
        prev_file, prev = state.records[key]
        if prev_file == str(path):
            if prev == snapshot:
                state.repairs.add("duplicated record dropped", path, d.rid)
                return True
            raise ImportRefused(
                _(
                    "%(where)s: question %(id)s answered by %(llm)s appears twice with "
                    "different content",
                    where=d.where,
                    id=repr(d.qid),
                    llm=repr(d.llm),
                )
            )
    state.records[key] = (str(path), snapshot)
    return False


def _add(state: _State, d: _Dialog, subject: str, path: Path) -> None:
    """The question and the answer, each once; answers must agree across files."""
    spec = specs.QuestionSpec(
        external_id=d.qid, text=d.question, task_type=subject, kind=d.kind, reference=d.hint
    )
    if state.bundle.add_question(spec, where=d.where) is spec:
        state.prompts[d.qid] = {}
    key = (d.qid, d.llm)
    if key in state.answers and state.answers[key][0] != d.answer:
        raise ImportRefused(
            _(
                "%(where)s: the answer differs from the one in %(file)s (the files disagree "
                "about what was rated)",
                where=d.where,
                file=state.answers[key][1],
            )
        )
    state.answers.setdefault(key, (d.answer, path.name))
    if d.llm not in state.prompts[d.qid]:
        state.prompts[d.qid][d.llm] = d.question
        state.bundle.responses.append(
            specs.ResponseSpec(
                question=d.qid, llm=d.llm, text=d.answer, external_id=d.dialog_uuid, where=d.where
            )
        )


def _record(state: _State, rec: Any, path: Path, index: int, subject: str, rater) -> None:
    d = _read(rec, path, index, state.repairs)
    if _is_duplicate(state, d, rec, path):
        return
    _add(state, d, subject, path)
    if state.scores:
        stars, flagged = _scores(
            rec, d.kind, where=d.where, path=path, rid=d.rid, repairs=state.repairs
        )
        state.bundle.ratings.append(
            specs.RatingSpec(
                study=state.study_key,
                rater=rater.name,
                question=d.qid,
                llm=d.llm,
                scores=stars,
                out_of_range=flagged,
                hint_shown=bool(d.hint),
                where=d.where,
            )
        )


def _prompt_variants(state: _State) -> None:
    """The question text is the wording most models were shown; the others are kept per LLM."""
    for qid, by_llm in state.prompts.items():
        counts = Counter(by_llm.values())
        if len(counts) <= 1:
            continue
        first_seen = list(dict.fromkeys(by_llm.values()))
        text = max(first_seen, key=lambda t: counts[t])
        q = state.bundle.questions[qid]
        q.text = text
        q.meta["prompt_variants"] = {llm: t for llm, t in by_llm.items() if t != text}
        state.repairs.add(
            "the question wording differs between the LLMs' dialogs: kept the most common as the "
            "question text, the other wordings in question.meta['prompt_variants']",
            "",
            qid,
        )


def parse(paths: list[Path], repairs: RepairLog, opts: Options, *, scores: bool) -> specs.Bundle:
    bundle = opts.bundle(DATASET, DESCRIPTION, SOURCE)
    state = _State(bundle=bundle, repairs=repairs, scores=scores, study_key=opts.study or STUDY)
    if scores:
        bundle.studies[state.study_key] = specs.StudySpec(
            name=state.study_key,
            mode="star",
            rubric="llmeval2",
            description="Scores released with LLMEval-2 (human panel and GPT-4), imported.",
        )
    loaded = []
    for path in map(Path, paths):
        rater_spec = rater_for(path, opts.rater, opts.rater_kind) if scores else None
        loaded.append((path, subject_of(path), rater_spec, load_list(path)))
    bar = Bar(total=sum(len(x[3]) for x in loaded), desc="reading records", enabled=opts.progress)
    for path, subject, rater_spec, data in loaded:
        if rater_spec:
            bundle.raters.setdefault(rater_spec.name, rater_spec)
        for index, rec in enumerate(data):
            bar.update()
            _record(state, rec, path, index, subject, rater_spec)
    bar.close()
    _prompt_variants(state)
    return bundle


def _scores(
    rec: dict[str, Any], kind: str, *, where: str, path: Path, rid: str, repairs: RepairLog
) -> tuple[dict[str, int], set[str]]:
    stars = rec.get("stars")
    if not isinstance(stars, dict) or not stars:
        raise ImportRefused(_("%(where)s: no 'stars' object with the scores", where=where))
    out: dict[str, int] = {}
    flagged: set[str] = set()
    for name, value in stars.items():
        key = CRITERIA.get(str(name).strip())
        if key is None:
            raise ImportRefused(
                _(
                    "%(where)s: unknown criterion %(name)s",
                    where=where,
                    name=repr(name),
                )
            )
        if key not in BY_KIND[kind]:
            raise ImportRefused(_not_for_kind(where, name, kind))
        lo, hi = RANGES[key]
        out[key] = check_score(
            value, lo=lo, hi=hi, criterion=str(name), file=path, record=rid, keep_out_of_range=True
        )
        if not lo <= out[key] <= hi:
            # Data as given: the human files hold a few 0s below the rubric's lowest grade 1.
            repairs.flag(
                f"score {name}={out[key]} outside the rubric's range {lo}-{hi}: kept as given, "
                "flagged (Score.out_of_range)",
                path,
                rid,
            )
            flagged.add(key)
    missing = BY_KIND[kind] - set(out)
    if missing:
        raise ImportRefused(
            _(
                "%(where)s: missing score(s) for %(criteria)s",
                where=where,
                criteria=", ".join(sorted(missing)),
            )
        )
    return out, flagged


def _not_for_kind(where: str, name: Any, kind: str) -> str:
    if kind == "objective":
        return _(
            "%(where)s: criterion %(name)s does not apply to objective questions",
            where=where,
            name=repr(name),
        )
    return _(
        "%(where)s: criterion %(name)s does not apply to subjective questions",
        where=where,
        name=repr(name),
    )
