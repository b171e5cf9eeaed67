"""ChineseAlpacaEval: `data/chinese_alpaca_eval.jsonl` (instructions: dataset, instruction,
instruction_zh), `model_outputs/<model>.jsonl` ({instruction, response}; the model is the file
name) and `results/<model>_vs_<reference>.jsonl` (example pairwise judgments: result model_1 /
model_2 / tie, evaluator, reference_model, instruction, model_output, reference_output).

The instructions have no id: a question's external id is its line number in the instructions file
("0001"). Outputs and judgments are matched to questions by the Chinese instruction text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import annotation.importers.bundle as specs
from annotation.importers.base import ImportRefused, Options, RepairLog, as_text, progress
from annotation.importers.bundle import message as _
from annotation.importers.bundle import place
from annotation.importers.reading import read_jsonl

DATASET = "ChineseAlpacaEval"
DESCRIPTION = (
    "ChineseAlpacaEval: 795 Chinese instructions (AlpacaEval, adapted), "
    "outputs of gpt-4-0613, gpt-3.5-turbo-0613 and the baseline text-davinci-003."
)
SOURCE = "github.com/CrossmodalGroup/ChineseAlpacaEval"
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
            _(
                "%(file)s: not a ChineseAlpacaEval file (expected data/chinese_alpaca_eval.jsonl, "
                "model_outputs/<model>.jsonl or results/<model>_vs_<reference>.jsonl)",
                file=path.name,
            )
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


def _instructions(bundle: specs.Bundle, path: Path, repairs: RepairLog) -> dict[str, str]:
    """Questions from the instructions file; returns instruction text -> question id."""
    by_text: dict[str, str] = {}
    for number, rec in read_jsonl(path):
        rid = f"line {number}"
        if not isinstance(rec, dict):
            raise ImportRefused(_("%(where)s: expected an object", where=place(path.name, rid)))
        for key in sorted(set(rec) - {"dataset", "instruction", "instruction_zh"}):
            repairs.add(f"ignored the unknown field {key!r}", path, rid)
        if not rec.get("instruction_zh"):
            raise ImportRefused(
                _(
                    "%(where)s: %(key)s is missing or empty",
                    where=place(path.name, rid),
                    key="instruction_zh",
                )
            )
        text = as_text(
            rec["instruction_zh"], what="instruction_zh", file=path, record=rid, repairs=repairs
        )
        qid = f"{number:04d}"
        if text in by_text:
            raise ImportRefused(
                _(
                    "%(where)s: the same instruction as question %(id)s (outputs are matched by "
                    "instruction, so it must be unique)",
                    where=place(path.name, rid),
                    id=by_text[text],
                )
            )
        by_text[text] = qid
        spec = specs.QuestionSpec(
            external_id=qid,
            text=text,
            task_type=str(rec.get("dataset") or ""),
            kind="subjective",
            meta={"instruction_en": rec.get("instruction") or ""},
        )
        bundle.add_question(spec, where=place(path.name, rid))
    return by_text


def _stored_instructions(bundle: specs.Bundle, needed: bool, owner: Any) -> dict[str, str]:
    """The stored questions of the dataset the importer means by name (theirs or the shared
    catalogue's, never another organizer's)."""
    from annotation.importers.ownership import dataset_named
    from annotation.models import Question

    dataset = dataset_named(owner, bundle.dataset)
    rows = Question.objects.filter(dataset=dataset).values_list("external_id", "text")
    by_text = {text: eid for eid, text in rows}
    if not by_text and needed:
        raise ImportRefused(
            _(
                "dataset %(name)s has no questions yet: import data/chinese_alpaca_eval.jsonl "
                "first (or together with the outputs)",
                name=repr(bundle.dataset),
            )
        )
    return by_text


def _question_for(by_text: dict[str, str], text: str, path: Path, rid: str) -> str:
    qid = by_text.get(text)
    if qid is None:
        raise ImportRefused(
            _(
                "%(where)s: the instruction %(instruction)s is not one of the dataset's questions",
                where=place(path.name, rid),
                instruction=repr(text[:40]),
            )
        )
    return qid


def _outputs(bundle, by_text, path: Path, repairs: RepairLog, progress_enabled: bool) -> None:
    """One model's answers; the model is the file name."""
    lines = read_jsonl(path)
    answered: set[str] = set()
    for number, rec in progress(lines, total=len(lines), desc=path.name, enabled=progress_enabled):
        rid = f"line {number}"
        if not isinstance(rec, dict) or "instruction" not in rec or "response" not in rec:
            raise ImportRefused(
                _("%(where)s: expected {instruction, response}", where=place(path.name, rid))
            )
        for key in sorted(set(rec) - {"instruction", "response", "generator", "dataset"}):
            repairs.add(f"ignored the unknown field {key!r}", path, rid)
        text = as_text(
            rec["instruction"], what="instruction", file=path, record=rid, repairs=repairs
        )
        qid = _question_for(by_text, text, path, rid)
        answer = as_text(rec["response"], what="response", file=path, record=rid, repairs=repairs)
        if qid in answered:
            raise ImportRefused(
                _(
                    "%(where)s: a second output for question %(id)s",
                    where=place(path.name, rid),
                    id=qid,
                )
            )
        answered.add(qid)
        bundle.responses.append(
            specs.ResponseSpec(
                question=qid, llm=path.stem, text=answer, where=place(path.name, rid)
            )
        )


def _judgment(bundle, by_text, study_key, model, reference, path, number, rec) -> None:
    rid = f"line {number}"
    where = place(path.name, rid)
    if not isinstance(rec, dict):
        raise ImportRefused(_("%(where)s: expected an object", where=where))
    for key in ("result", "evaluator", "instruction", "model_output", "reference_output"):
        if key not in rec:
            raise ImportRefused(
                _("%(where)s: the field %(key)s is missing", where=where, key=repr(key))
            )
    if rec.get("reference_model") not in (None, reference):
        raise ImportRefused(
            _(
                "%(where)s: reference_model %(value)s but the file name says %(name)s",
                where=where,
                value=f"{rec['reference_model']!r:.40}",
                name=repr(reference),
            )
        )
    choice = RESULTS.get(str(rec["result"]).strip())
    if choice is None:
        raise ImportRefused(
            _("%(where)s: unknown result %(value)s", where=where, value=f"{rec['result']!r:.40}")
        )
    qid = _question_for(by_text, str(rec["instruction"]), path, rid)
    rater_name = f"{str(rec['evaluator']).strip()} (ChineseAlpacaEval)"
    bundle.raters.setdefault(rater_name, specs.RaterSpec(rater_name, "judge", "judge"))
    for llm, key in ((model, "model_output"), (reference, "reference_output")):
        bundle.responses.append(
            specs.ResponseSpec(question=qid, llm=llm, text=str(rec[key]), where=where)
        )
    bundle.ratings.append(
        specs.RatingSpec(
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


def _results(bundle: specs.Bundle, by_text: dict[str, str], study_key: str, path: Path) -> None:
    if "_vs_" not in path.stem:
        raise ImportRefused(
            _("%(file)s: results files are named <model>_vs_<reference>.jsonl", file=path.name)
        )
    model, reference = path.stem.split("_vs_", 1)
    bundle.studies.setdefault(
        study_key,
        specs.StudySpec(
            name=study_key,
            mode="pairwise",
            rubric="pairwise",
            description="Example pairwise judgments released with ChineseAlpacaEval, imported.",
        ),
    )
    for number, rec in read_jsonl(path):
        _judgment(bundle, by_text, study_key, model, reference, path, number, rec)


def parse(paths: list[Path], repairs: RepairLog, opts: Options) -> specs.Bundle:
    bundle = opts.bundle(DATASET, DESCRIPTION, SOURCE)
    by_role: dict[str, list[Path]] = {"instructions": [], "outputs": [], "results": []}
    for p in expand(paths):
        by_role[role_of(p)].append(p)
    if len(by_role["instructions"]) > 1:
        raise ImportRefused(_("give one instructions file (data/chinese_alpaca_eval.jsonl)"))
    # Instruction text -> question external id, from the file or from the stored dataset.
    if by_role["instructions"]:
        by_text = _instructions(bundle, by_role["instructions"][0], repairs)
    else:
        needed = bool(by_role["outputs"] or by_role["results"])
        by_text = _stored_instructions(bundle, needed, opts.owner)
    for path in by_role["outputs"]:
        _outputs(bundle, by_text, path, repairs, opts.progress)
    for path in by_role["results"]:
        _results(bundle, by_text, opts.study or STUDY, path)
    return bundle
