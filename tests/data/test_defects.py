"""Every defect found in the real files: repaired and counted, or refused with a message naming the
file and the record while every count stays unchanged. docs/import-formats.md lists them."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.importers import ImportRefused, dataset_import
from annotation.models import Assignment, ImportRecord, Question, Rating, Response, Score
from ranking.quality import data_quality
from tests.data.conftest import FIXTURES, L2, l2_files, table_counts


def _repairs(result, text: str) -> list:
    return [r for r in result.repairs if text in r.what]


def _refused(fmt: str, paths, match: str, **options) -> str:
    before = table_counts()
    with pytest.raises(ImportRefused, match=match) as info:
        dataset_import(format=fmt, paths=paths, progress=False, **options)
    assert table_counts() == before
    return str(info.value)


# --- repaired ---------------------------------------------------------------------------------


def test_numeric_hints_are_stored_as_text_and_counted(db):
    # Mathematics_16 has the hint 4 (a JSON number) in all twenty records.
    result = dataset_import(format="llmeval2", paths=l2_files("data"), progress=False)
    repaired = _repairs(result, "hint was a JSON number")
    assert sum(len(r.records) for r in repaired) == 20
    assert "Mathematics_16/360" in repaired[0].records
    assert Question.objects.get(external_id="Mathematics_16").reference == "4"
    assert "repaired 20: hint was a JSON number" in "\n".join(result.summary_lines())


def test_boolean_answers_are_stored_as_the_text_true(db):
    # Six true/false answers in Foreign_Languages are JSON booleans, not strings.
    result = dataset_import(format="llmeval2", paths=l2_files("data"), progress=False)
    (repair,) = _repairs(result, "JSON boolean")
    assert "Foreign_Languages_17/tigerbot-180b" in repair.records
    r = Response.objects.get(
        question__external_id="Foreign_Languages_17", llm__name="tigerbot-180b"
    )
    assert r.text == "True" and r.length == 4


def test_truncated_dialog_uuids_are_rebuilt(db):
    result = dataset_import(format="llmeval2", paths=l2_files("data"), progress=False)
    (repair,) = _repairs(result, "dialog_uuid truncated")
    assert sorted(repair.records) == ["Mathematics_17/GPT3.5", "Mathematics_17/baichuan-13b-chat"]
    r = Response.objects.get(question__external_id="Mathematics_17", llm__name="GPT3.5")
    assert r.external_id == "GPT3.5_Mathematics_17"


def test_differing_prompt_wordings_keep_the_most_common_and_the_variants(db):
    result = dataset_import(format="llmeval2", paths=l2_files("data"), progress=False)
    (repair,) = _repairs(result, "wording differs")
    assert "Foreign_Languages_1" in repair.records
    q = Question.objects.get(external_id="Foreign_Languages_1")
    variants = q.meta["prompt_variants"]
    assert variants and all(text != q.text for text in variants.values())
    records = [
        r
        for r in json.loads((L2 / "data" / "Foreign_Languages_data.json").read_text("utf-8"))
        if r["question_uuid"] == "Foreign_Languages_1"
    ]
    shown = [r["dialog"][0]["content"] for r in records]
    assert shown.count(q.text) == max(shown.count(t) for t in shown)


def test_human_scores_of_zero_are_kept_as_given_and_flagged(db):
    result = dataset_import(
        format="llmeval2-scores", paths=l2_files("results/human-score"), progress=False
    )
    (corr,) = _repairs(result, "score Correctness=0")
    assert corr.kind == "flagged"
    assert "Chinese_Language_and_Literature_10/tigerbot-180b" in corr.records
    assert "flagged " in "\n".join(result.summary_lines())
    rating = Rating.objects.get(
        item__question__external_id="Chinese_Language_and_Literature_10",
        item__response_a__llm__name="tigerbot-180b",
    )
    # The published value, never raised to the rubric's lowest grade.
    assert rating.scores_dict() == {"correctness": 0, "explanation_correctness": 0}
    assert {s.criterion.key for s in rating.scores.all() if s.out_of_range} == {
        "correctness",
        "explanation_correctness",
    }
    assert rating.comment == ""
    in_range = Score.objects.filter(out_of_range=False)
    assert not in_range.filter(value=0).exists()


def test_llmeval1_dialogs_scored_twice_become_repeat_ratings(db):
    path = next((FIXTURES / "llmeval-1" / "data").glob("*.csv"))
    result = dataset_import(format="llmeval1-scores", paths=[path], progress=False)
    same = _repairs(result, "twice with the same scores")
    different = _repairs(result, "twice with different scores")
    assert any("ChatYuan-Large_Code_13" in r for r in same[0].records)
    assert any("ChatYuan-Large_Code_32" in r for r in different[0].records)
    repeats = Assignment.objects.filter(is_repeat=True)
    assert repeats.count() == len(same[0].records) + len(different[0].records)
    repeat = repeats.get(item__response_a__external_id="ChatYuan-Large_Code_32")
    assert repeat.repeat_of.item_id == repeat.item_id
    first = repeat.repeat_of.rating.scores_dict()
    second = repeat.rating.scores_dict()
    # ids 228/229 (first) vs 27428/27429 (second): logicality and informativeness 3 -> 2.
    assert (first["logicality"], second["logicality"]) == (3, 2)
    # The item counts only first ratings.
    assert repeat.item.n_ratings == 1


def test_alignbench_stray_nested_revisions_are_dropped_and_kept_in_meta(db):
    path = FIXTURES / "alignbench" / "data" / "data_release_v1.0.jsonl"
    result = dataset_import(format="alignbench", paths=[path], progress=False)
    (repair,) = _repairs(result, "stray numeric key")
    assert any("question_id 30" in r and "'29'" in r for r in repair.records)
    q = Question.objects.get(dataset__name="AlignBench v1.0", external_id="30")
    assert q.meta["superseded_revision"]["question_id"] == 30
    assert q.reference != q.meta["superseded_revision"]["reference"]


def test_a_duplicated_identical_record_is_dropped(db, corrupt_json):
    path = corrupt_json(l2_files("data")[0], lambda d: d.append(dict(d[3])))
    result = dataset_import(format="llmeval2", paths=[path], progress=False)
    (repair,) = _repairs(result, "duplicated record")
    assert len(repair.records) == 1
    assert Response.objects.count() == result.added["responses"]


def test_an_unknown_field_is_ignored_and_counted(db, corrupt_json):
    path = corrupt_json(l2_files("data")[0], lambda d: d[0].update({"comment": "x"}))
    result = dataset_import(format="llmeval2", paths=[path], progress=False)
    assert _repairs(result, "unknown field 'comment'")


# --- refused ----------------------------------------------------------------------------------


def test_a_published_score_outside_the_range_is_kept_and_flagged(db, corrupt_json):
    src = L2 / "results" / "gpt-score" / "Mathematics_data.json"

    def mutate(data):
        rec = next(r for r in data if r["type"] == "B")
        rec["stars"]["Accuracy"] = 7

    path = corrupt_json(src, mutate)
    result = dataset_import(format="llmeval2-scores", paths=[path], progress=False)
    assert _repairs(result, "score Accuracy=7 outside the rubric's range 1-5")
    flagged = Score.objects.get(out_of_range=True)
    assert (flagged.criterion.key, flagged.value) == ("accuracy", 7)


@pytest.mark.parametrize("value", [101, -1, "²", "٣", "9" * 5000, 2.5, True, "\x00"])
def test_a_score_that_is_no_plausible_grade_is_refused(db, corrupt_json, value):
    src = L2 / "results" / "gpt-score" / "Mathematics_data.json"

    def mutate(data):
        rec = next(r for r in data if r["type"] == "B")
        rec["stars"]["Accuracy"] = value

    path = corrupt_json(src, mutate)
    message = _refused("llmeval2-scores", [path], "Accuracy")
    assert "Mathematics_data.json" in message
    assert "outside the rubric's range" in message or "not a whole number" in message
    failed = ImportRecord.objects.get(ok=False)
    assert "Accuracy" in failed.message


def test_refusal_after_a_good_import_leaves_every_count_unchanged(l2_scores_imported, corrupt_json):
    src = L2 / "results" / "human-score" / "Foreign_Languages_data.json"

    def mutate(data):
        data[10]["stars"]["Correctness"] = 400

    path = corrupt_json(src, mutate)
    _refused("llmeval2-scores", [path], r"Foreign_Languages_data.json, record .*Correctness=400")


def test_an_answer_that_differs_from_the_stored_one_is_refused(l2_scores_imported, corrupt_json):
    src = L2 / "data" / "Mathematics_data.json"
    path = corrupt_json(src, lambda d: d[2]["dialog"][1].update({"content": "changed"}))
    message = _refused("llmeval2", [path], "differs from the one already stored")
    assert "Mathematics_data.json, record 2" in message


def test_an_unknown_question_type_is_refused(db, corrupt_json):
    path = corrupt_json(l2_files("data")[0], lambda d: d[5].update({"type": "C"}))
    message = _refused("llmeval2", [path], "type must be 'A' or 'B'")
    assert "record 5" in message


def test_a_record_with_two_contradicting_copies_is_refused(db, corrupt_json):
    def mutate(data):
        twin = json.loads(json.dumps(data[0]))
        twin["dialog"][1]["content"] = "another answer"
        data.append(twin)

    path = corrupt_json(l2_files("data")[0], mutate)
    _refused("llmeval2", [path], "record 200 .*appears twice with different content")


def test_a_criterion_of_the_other_question_kind_is_refused(db, corrupt_json):
    def mutate(data):
        rec = next(r for r in data if r["type"] == "A")
        rec["stars"] = {"Accuracy": 3, "Fluency": 3}

    path = corrupt_json(L2 / "results" / "gpt-score" / "Mathematics_data.json", mutate)
    _refused("llmeval2-scores", [path], "does not apply to objective questions")


def test_invalid_json_is_refused_with_its_line(db, tmp_path):
    path = tmp_path / "Law_data.json"
    path.write_text('[{"question_uuid": "Law_1",\n oops}]', encoding="utf-8")
    _refused("llmeval2", [path], r"Law_data.json: not valid JSON at line 2")


def test_llmeval1_score_out_of_range_is_refused_naming_the_line(db, tmp_path):
    src = next((FIXTURES / "llmeval-1" / "data").glob("*.csv"))
    lines = src.read_text(encoding="utf-8").splitlines()
    lines[5] = lines[5].rsplit(",", 1)[0] + ",4"
    path = tmp_path / src.name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _refused("llmeval1-scores", [path], r"line 6 \(id \d+\): score \w+=4 is outside")


def test_alignbench_unknown_subcategory_is_refused(db, tmp_path):
    src = FIXTURES / "alignbench" / "data" / "data_v1.1_release.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[2])
    rec["subcategory"] = "天体物理"
    lines[2] = json.dumps(rec, ensure_ascii=False)
    path = tmp_path / src.name
    path.write_text("\n".join(lines), encoding="utf-8")
    _refused("alignbench", [path], r"line 3 \(question_id \d+\): unknown subcategory")


def test_a_model_output_for_an_unknown_instruction_is_refused(db, copy_tree):
    root = copy_tree(FIXTURES / "chinese-alpaca-eval")
    out = root / "model_outputs" / "gpt-4-0613.jsonl"
    lines = out.read_text(encoding="utf-8").splitlines()
    lines[3] = json.dumps({"instruction": "不存在的指令", "response": "x"}, ensure_ascii=False)
    out.write_text("\n".join(lines), encoding="utf-8")
    _refused("chinese-alpaca-eval", [root], r"gpt-4-0613.jsonl, line 4: the instruction")


def test_the_command_exits_non_zero_on_refusal_and_writes_nothing(db, corrupt_json):
    path = corrupt_json(l2_files("data")[0], lambda d: d[1].update({"dialog": "nope"}))
    before = table_counts()
    with pytest.raises(CommandError, match="refused, nothing was written: .*record 1"):
        call_command("import_dataset", str(path), format="llmeval2", no_progress=True)
    assert table_counts() == before


def test_empty_and_null_answers_are_imported_and_flagged_not_refused(db, corrupt_json):
    src = L2 / "results" / "gpt-score" / "Mathematics_data.json"

    def mutate(data):
        data[0]["dialog"][1]["content"] = ""
        data[1]["dialog"][1]["content"] = None

    path = corrupt_json(src, mutate)
    result = dataset_import(format="llmeval2-scores", paths=[path], progress=False)
    (flag,) = _repairs(result, "empty answer")
    assert flag.kind == "flagged" and len(flag.records) == 2
    assert Response.objects.filter(length=0).count() == 2
    study = Rating.objects.first().item.study
    table = data_quality(study).set_index("issue")["n"]
    assert table["empty answer"] == 2


def test_a_question_stored_with_another_text_is_refused_and_the_same_text_is_not(db, tmp_path):
    def jsonl(name: str, text: str):
        path = tmp_path / name
        rows = [
            {"type": "question", "question_id": "Q1", "text": text},
            {"type": "response", "question_id": "Q1", "llm": "m1", "text": "four"},
        ]
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        return [path]

    dataset_import(format="jsonl", paths=jsonl("a.jsonl", "2+2?"), dataset="d", progress=False)
    again = dataset_import(
        format="jsonl", paths=jsonl("b.jsonl", "2+2?"), dataset="d", progress=False
    )
    assert again.added.get("questions", 0) == 0
    message = _refused("jsonl", jsonl("c.jsonl", "3+3?"), "another text", dataset="d")
    assert "'Q1'" in message
    assert Question.objects.get(external_id="Q1").text == "2+2?"
