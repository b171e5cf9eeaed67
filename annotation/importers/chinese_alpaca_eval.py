"""ChineseAlpacaEval: `data/chinese_alpaca_eval.jsonl` (instructions: dataset, instruction,
instruction_zh), `model_outputs/<model>.jsonl` ({instruction, response}; the model is the file
name) and `results/<model>_vs_<reference>.jsonl` (example pairwise judgments: result model_1 /
model_2 / tie, evaluator, reference_model, instruction, model_output, reference_output).

The instructions have no id: a question's external id is its line number in the instructions file
("0001"). Outputs and judgments are matched to questions by the Chinese instruction text.
"""

from __future__ import annotations

from pathlib import Path

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
    progress,
)

DATASET = "ChineseAlpacaEval"
STUDY = "ChineseAlpacaEval (imported judgments)"
RESULTS = {"model_1": "first", "model_2": "second", "tie": "tie", "draw": "tie"}


def role_of(path: Path) -> str:
    """Which of the three kinds of file this is: by name first (uploads have no folders)."""
    if path.name == "chinese_alpaca_eval.jsonl" or path.parent.name == "data":
        return "instructions"
    if "_vs_" in path.stem or path.parent.name == "results":
        return "results"
    if path.suffix != ".jsonl":
        raise ImportRefused(
            f"{path.name}: not a ChineseAlpacaEval file (expected data/chinese_alpaca_eval.jsonl, "
            "model_outputs/<model>.jsonl or results/<model>_vs_<reference>.jsonl)"
        )
    return "outputs"


def expand(paths: list[Path]) -> list[Path]:
    """A folder stands for the instructions, every model's outputs and the example results."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted((p / "data").glob("chinese_alpaca_eval.jsonl"))
            out += sorted((p / "model_outputs").glob("*.jsonl"))
            out += sorted((p / "results").glob("*.jsonl"))
        else:
            out.append(p)
    return out


def parse(
    paths: list[Path],
    repairs: RepairLog,
    *,
    dataset: str | None = None,
    study: str | None = None,
    progress_enabled: bool = True,
    **_ignored,
) -> Bundle:
    from annotation.models import Question

    paths = expand(paths)
    bundle = Bundle(
        dataset=dataset or DATASET,
        dataset_description="ChineseAlpacaEval: 795 Chinese instructions (AlpacaEval, adapted), "
        "outputs of gpt-4-0613, gpt-3.5-turbo-0613 and the baseline text-davinci-003.",
        dataset_source="github.com/CrossmodalGroup/ChineseAlpacaEval",
    )
    study_key = study or STUDY
    by_role: dict[str, list[Path]] = {"instructions": [], "outputs": [], "results": []}
    for p in paths:
        by_role[role_of(p)].append(p)
    if len(by_role["instructions"]) > 1:
        raise ImportRefused("give one instructions file (data/chinese_alpaca_eval.jsonl)")

    # Instruction text -> question external id, from the file or from the stored dataset.
    by_text: dict[str, str] = {}
    for path in by_role["instructions"]:
        for number, rec in read_jsonl(path):
            rid = f"line {number}"
            if not isinstance(rec, dict):
                raise ImportRefused(f"{path.name}, {rid}: expected an object")
            for key in sorted(set(rec) - {"dataset", "instruction", "instruction_zh"}):
                repairs.add(f"ignored the unknown field {key!r}", path, rid)
            if not rec.get("instruction_zh"):
                raise ImportRefused(f"{path.name}, {rid}: instruction_zh is missing or empty")
            text = as_text(
                rec["instruction_zh"], what="instruction_zh", file=path, record=rid, repairs=repairs
            )
            qid = f"{number:04d}"
            if text in by_text:
                raise ImportRefused(
                    f"{path.name}, {rid}: the same instruction as question {by_text[text]} "
                    "(outputs are matched by instruction, so it must be unique)"
                )
            by_text[text] = qid
            meta = {"instruction_en": rec.get("instruction") or ""}
            bundle.add_question(
                QuestionSpec(
                    external_id=qid,
                    text=text,
                    task_type=str(rec.get("dataset") or ""),
                    kind="subjective",
                    meta=meta,
                ),
                where=f"{path.name}, {rid}",
            )
    if not by_role["instructions"]:
        by_text = {
            text: eid
            for eid, text in Question.objects.filter(dataset__name=bundle.dataset).values_list(
                "external_id", "text"
            )
        }
        if not by_text and (by_role["outputs"] or by_role["results"]):
            raise ImportRefused(
                f"dataset {bundle.dataset!r} has no questions yet: import "
                "data/chinese_alpaca_eval.jsonl first (or together with the outputs)"
            )

    def question_for(text: str, path: Path, rid: str) -> str:
        qid = by_text.get(text)
        if qid is None:
            raise ImportRefused(
                f"{path.name}, {rid}: the instruction {text[:40]!r} is not one of the dataset's "
                "questions"
            )
        return qid

    for path in by_role["outputs"]:
        model = path.stem
        lines = read_jsonl(path)
        answered: set[str] = set()
        for number, rec in progress(
            lines, total=len(lines), desc=path.name, enabled=progress_enabled
        ):
            rid = f"line {number}"
            if not isinstance(rec, dict) or "instruction" not in rec or "response" not in rec:
                raise ImportRefused(f"{path.name}, {rid}: expected {{instruction, response}}")
            for key in sorted(set(rec) - {"instruction", "response", "generator", "dataset"}):
                repairs.add(f"ignored the unknown field {key!r}", path, rid)
            text = as_text(
                rec["instruction"], what="instruction", file=path, record=rid, repairs=repairs
            )
            qid = question_for(text, path, rid)
            answer = as_text(
                rec["response"], what="response", file=path, record=rid, repairs=repairs
            )
            if qid in answered:
                raise ImportRefused(f"{path.name}, {rid}: a second output for question {qid}")
            answered.add(qid)
            bundle.responses.append(
                ResponseSpec(question=qid, llm=model, text=answer, where=f"{path.name}, {rid}")
            )

    for path in by_role["results"]:
        if "_vs_" not in path.stem:
            raise ImportRefused(
                f"{path.name}: results files are named <model>_vs_<reference>.jsonl"
            )
        model, reference = path.stem.split("_vs_", 1)
        bundle.studies.setdefault(
            study_key,
            StudySpec(
                name=study_key,
                mode="pairwise",
                rubric="pairwise",
                description="Example pairwise judgments released with ChineseAlpacaEval, imported.",
            ),
        )
        for number, rec in read_jsonl(path):
            rid = f"line {number}"
            where = f"{path.name}, {rid}"
            if not isinstance(rec, dict):
                raise ImportRefused(f"{where}: expected an object")
            for key in ("result", "evaluator", "instruction", "model_output", "reference_output"):
                if key not in rec:
                    raise ImportRefused(f"{where}: the field {key!r} is missing")
            if rec.get("reference_model") not in (None, reference):
                raise ImportRefused(
                    f"{where}: reference_model {rec['reference_model']!r} but the file name says "
                    f"{reference!r}"
                )
            choice = RESULTS.get(str(rec["result"]).strip())
            if choice is None:
                raise ImportRefused(f"{where}: unknown result {rec['result']!r}")
            qid = question_for(str(rec["instruction"]), path, rid)
            evaluator = str(rec["evaluator"]).strip()
            rater_name = f"{evaluator} (ChineseAlpacaEval)"
            bundle.raters.setdefault(rater_name, RaterSpec(rater_name, "judge", "judge"))
            bundle.responses.append(
                ResponseSpec(question=qid, llm=model, text=str(rec["model_output"]), where=where)
            )
            bundle.responses.append(
                ResponseSpec(
                    question=qid, llm=reference, text=str(rec["reference_output"]), where=where
                )
            )
            bundle.ratings.append(
                RatingSpec(
                    study=study_key,
                    rater=rater_name,
                    question=qid,
                    llm=model,
                    other_llm=reference,
                    choice=choice,
                    first_on_left=True,  # the prompt lists output_1 (the model) first
                    where=where,
                )
            )
    return bundle
