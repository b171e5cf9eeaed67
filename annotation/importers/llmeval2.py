"""LLMEval-2: `data/<Subject>_data.json` (questions and answers) and the score files
`results/human-score/*.json`, `results/gpt-score/*.json` (the same records plus `stars`).

Each file is a JSON list of {question_uuid, dialog_uuid, llm_name, dialog: [{role: user, content},
{role: llm, content}], hint, type} with type A = objective, B = subjective.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from annotation.importers.base import (
    Bar,
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
)

DATASET = "LLMEval-2"
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
            f"{path.name}: LLMEval-2 files are named <Subject>_data.json (the subject is the task type)"
        )
    return stem[: -len("_data")].replace("_", " ")


def rater_for(path: Path, rater: str | None, rater_kind: str | None) -> RaterSpec:
    if rater or rater_kind:
        if not (rater and rater_kind in ("human", "judge")):
            raise ImportRefused("--rater NAME needs --rater-kind human|judge (and vice versa)")
        return RaterSpec(
            name=rater, kind=rater_kind, pool="judge" if rater_kind == "judge" else "onsite"
        )
    parts = {p.lower() for p in path.parts}
    if "human-score" in parts:
        return RaterSpec(name=HUMAN_RATER, kind="human", pool="onsite")
    if "gpt-score" in parts:
        return RaterSpec(name=JUDGE_RATER, kind="judge", pool="judge")
    raise ImportRefused(
        f"{path.name}: cannot tell whose scores these are (the path has neither human-score nor "
        "gpt-score); pass --rater NAME --rater-kind human|judge"
    )


def load_list(path: Path) -> list:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportRefused(f"{path.name}: cannot read the file: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ImportRefused(
            f"{path.name}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    except ValueError as exc:  # e.g. a number of more than 4,300 digits
        raise ImportRefused(f"{path.name}: {exc}") from exc
    if not isinstance(data, list):
        raise ImportRefused(
            f"{path.name}: expected a JSON list of records, got {type(data).__name__}"
        )
    return data


def parse(
    paths: list[Path],
    repairs: RepairLog,
    *,
    scores: bool,
    dataset: str | None = None,
    study: str | None = None,
    rater: str | None = None,
    rater_kind: str | None = None,
    progress_enabled: bool = True,
) -> Bundle:
    bundle = Bundle(
        dataset=dataset or DATASET,
        dataset_description="LLMEval-2: 12 subjects x 40 questions, answers of 20 LLMs (Chinese).",
        dataset_source="github.com/llmeval/llmeval-2",
    )
    study_key = study or STUDY
    if scores:
        bundle.studies[study_key] = StudySpec(
            name=study_key,
            mode="star",
            rubric="llmeval2",
            description="Scores released with LLMEval-2 (human panel and GPT-4), imported.",
        )
    # Prompts per question: the models were not always shown the same wording.
    prompts: dict[str, dict[str, str]] = defaultdict(dict)
    records_by_key: dict[tuple[str, str], tuple[str, tuple]] = {}
    answers: dict[tuple[str, str], tuple[str, str]] = {}

    loaded = []
    for path in map(Path, paths):
        subject = subject_of(path)
        rater_spec = rater_for(path, rater, rater_kind) if scores else None
        loaded.append((path, subject, rater_spec, load_list(path)))
    bar = Bar(
        total=sum(len(x[3]) for x in loaded), desc="reading records", enabled=progress_enabled
    )
    for path, subject, rater_spec, data in loaded:
        if rater_spec:
            bundle.raters.setdefault(rater_spec.name, rater_spec)
        for index, rec in enumerate(data):
            bar.update()
            rid = f"record {index}"
            if not isinstance(rec, dict):
                raise ImportRefused(
                    f"{path.name}, {rid}: expected an object, got {type(rec).__name__}"
                )
            for key in ("question_uuid", "llm_name", "dialog", "type"):
                if key not in rec or rec[key] in (None, ""):
                    raise ImportRefused(f"{path.name}, {rid}: the field {key!r} is missing")
            qid = as_text(
                rec["question_uuid"], what="question_uuid", file=path, record=rid, repairs=repairs
            )
            llm = as_text(rec["llm_name"], what="llm_name", file=path, record=rid, repairs=repairs)
            where = f"{path.name}, {rid} (question {qid}, LLM {llm})"
            rid = f"{qid}/{llm}"
            stray = sorted(set(rec) - KNOWN_KEYS)
            for key in stray:
                repairs.add(f"ignored the unknown field {key!r}", path, rid)
            if rec["type"] not in KINDS:
                raise ImportRefused(f"{where}: type must be 'A' or 'B', not {rec['type']!r}")
            kind = KINDS[rec["type"]]
            dialog = rec["dialog"]
            if not isinstance(dialog, list):
                raise ImportRefused(f"{where}: dialog must be a list of turns")
            turns = {"user": [], "llm": []}
            for turn in dialog:
                role = turn.get("role") if isinstance(turn, dict) else None
                if role not in turns:
                    raise ImportRefused(f"{where}: a dialog turn has the role {role!r}")
                turns[role].append(turn.get("content"))
            if len(turns["user"]) != 1 or len(turns["llm"]) != 1:
                raise ImportRefused(
                    f"{where}: expected one user turn and one llm turn, found "
                    f"{len(turns['user'])} and {len(turns['llm'])}"
                )
            question_text = as_text(
                turns["user"][0],
                what="the question (user turn)",
                file=path,
                record=rid,
                repairs=repairs,
            )
            answer = as_text(
                turns["llm"][0],
                what="the answer (llm turn)",
                file=path,
                record=rid,
                repairs=repairs,
            )
            if not question_text.strip():
                raise ImportRefused(f"{where}: the question text is empty")
            hint = rec.get("hint")
            hint = (
                ""
                if hint is None
                else as_text(hint, what="hint", file=path, record=rid, repairs=repairs)
            )
            dialog_uuid = rec.get("dialog_uuid")
            expected = f"{llm}_{qid}"
            if not isinstance(dialog_uuid, str) or not dialog_uuid:
                repairs.add("dialog_uuid missing, rebuilt as <llm_name>_<question_uuid>", path, rid)
                dialog_uuid = expected
            elif dialog_uuid != expected and expected.startswith(dialog_uuid):
                repairs.add(
                    "dialog_uuid truncated, rebuilt as <llm_name>_<question_uuid>", path, rid
                )
                dialog_uuid = expected

            key = (qid, llm)
            snapshot = (question_text, answer, hint, kind, rec.get("stars") if scores else None)
            if key in records_by_key:
                prev_file, prev = records_by_key[key]
                if prev_file == str(path):
                    if prev == snapshot:
                        repairs.add("duplicated record dropped", path, rid)
                        continue
                    raise ImportRefused(
                        f"{where}: question {qid!r} answered by {llm!r} appears twice with "
                        "different content"
                    )
            records_by_key[key] = (str(path), snapshot)

            spec = QuestionSpec(
                external_id=qid,
                text=question_text,
                task_type=subject,
                kind=kind,
                reference=hint,
            )
            have = bundle.add_question(spec, where=where)
            if have is spec:
                prompts[qid] = {}
            if key in answers and answers[key][0] != answer:
                raise ImportRefused(
                    f"{where}: the answer differs from the one in {answers[key][1]} "
                    "(the files disagree about what was rated)"
                )
            answers.setdefault(key, (answer, path.name))
            if llm not in prompts[qid]:
                prompts[qid][llm] = question_text
                bundle.responses.append(
                    ResponseSpec(
                        question=qid, llm=llm, text=answer, external_id=dialog_uuid, where=where
                    )
                )
            if scores:
                stars, flagged = _scores(rec, kind, path=path, rid=rid, repairs=repairs)
                bundle.ratings.append(
                    RatingSpec(
                        study=study_key,
                        rater=rater_spec.name,
                        question=qid,
                        llm=llm,
                        scores=stars,
                        out_of_range=flagged,
                        hint_shown=bool(hint),
                        where=where,
                    )
                )

    bar.close()
    # The question text is the wording most models were shown; the others are kept per LLM.
    for qid, by_llm in prompts.items():
        counts = Counter(by_llm.values())
        if len(counts) <= 1:
            continue
        first_seen = list(dict.fromkeys(by_llm.values()))
        text = max(first_seen, key=lambda t: counts[t])
        q = bundle.questions[qid]
        q.text = text
        q.meta["prompt_variants"] = {llm: t for llm, t in by_llm.items() if t != text}
        repairs.add(
            "the question wording differs between the LLMs' dialogs: kept the most common as the "
            "question text, the other wordings in question.meta['prompt_variants']",
            "",
            qid,
        )
    return bundle


def _scores(
    rec: dict[str, Any], kind: str, *, path: Path, rid: str, repairs: RepairLog
) -> tuple[dict[str, int], set[str]]:
    stars = rec.get("stars")
    if not isinstance(stars, dict) or not stars:
        raise ImportRefused(f"{path.name}, record {rid}: no 'stars' object with the scores")
    out: dict[str, int] = {}
    flagged: set[str] = set()
    for name, value in stars.items():
        key = CRITERIA.get(str(name).strip())
        if key is None:
            raise ImportRefused(f"{path.name}, record {rid}: unknown criterion {name!r}")
        if key not in BY_KIND[kind]:
            raise ImportRefused(
                f"{path.name}, record {rid}: criterion {name!r} does not apply to {kind} questions"
            )
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
            f"{path.name}, record {rid}: missing score(s) for {', '.join(sorted(missing))}"
        )
    return out, flagged
