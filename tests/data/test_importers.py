"""Each format imports its fixture files; a second import adds nothing."""

from __future__ import annotations

import csv
import json

import pytest

from annotation import models as am
from annotation.importers import ImportRefused, dataset_import
from tests.data.conftest import FIXTURES, l2_files, table_counts
from tests.factories import import_refused


def _l2_records(folder: str) -> list[dict]:
    out = []
    for path in l2_files(folder):
        out += json.loads(path.read_text(encoding="utf-8"))
    return out


def test_llmeval2_imports_questions_answers_and_llms_from_the_data_files(db):
    records = _l2_records("data")
    result = dataset_import(format="llmeval2", paths=l2_files("data"), progress=False)

    dataset = am.Dataset.objects.get(name="LLMEval-2")
    assert (
        result.added["questions"]
        == dataset.questions.count()
        == len({r["question_uuid"] for r in records})
    )
    assert result.added["responses"] == len(records) == am.Response.objects.count()
    assert am.LLM.objects.count() == len({r["llm_name"] for r in records})
    rec = records[0]
    q = am.Question.objects.get(external_id=rec["question_uuid"])
    assert q.kind == {"A": "objective", "B": "subjective"}[rec["type"]]
    assert q.reference == str(rec["hint"])
    assert q.task_type == l2_files("data")[0].stem.removesuffix("_data").replace("_", " ")
    r = am.Response.objects.get(question=q, llm__name=rec["llm_name"])
    assert r.text == rec["dialog"][1]["content"]
    assert r.length == len(r.text)
    assert r.external_id == rec["dialog_uuid"]
    assert not am.Rating.objects.exists()


def test_llmeval2_scores_become_ratings_of_the_two_named_raters(l2_scores_imported):
    human = _l2_records("results/human-score")
    study = am.Study.objects.get(name="LLMEval-2 (imported scores)")
    assert study.status == am.Study.Status.CLOSED
    assert study.rubric.key == "llmeval2" and study.mode == "star"
    assert study.items.count() == len(human)
    panel = am.Rater.objects.get(name="LLMEval-2 human panel")
    judge = am.Rater.objects.get(name="GPT-4 (LLMEval-2)")
    assert (panel.kind, panel.pool) == ("human", "onsite")
    assert (judge.kind, judge.pool) == ("judge", "judge")
    assert panel.ratings.count() == judge.ratings.count() == len(human)
    assert am.Score.objects.count() == 2 * sum(len(r["stars"]) for r in human)
    # Every rating answers a submitted assignment.
    a = am.Assignment.objects.filter(rater=panel).first()
    assert a.status == "submitted" and a.submitted_at is not None and a.left_is_a
    assert a.hint_shown == bool(a.item.question.reference)
    assert set(am.Item.objects.filter(study=study).values_list("n_ratings", flat=True)) == {2}
    assert study.ratings_per_item == 2


def test_llmeval2_scores_match_the_file(l2_scores_imported):
    rec = _l2_records("results/gpt-score")[5]
    rating = am.Rating.objects.get(
        rater__name="GPT-4 (LLMEval-2)",
        item__response_a__llm__name=rec["llm_name"],
        item__question__external_id=rec["question_uuid"],
    )
    keys = {k: k.lower().replace(" ", "_") for k in rec["stars"]}
    assert rating.scores_dict() == {keys[k]: v for k, v in rec["stars"].items()}


def test_importing_the_same_files_twice_adds_nothing(l2_scores_imported):
    before = table_counts()
    again = dataset_import(
        format="llmeval2-scores",
        paths=l2_files("results/human-score") + l2_files("results/gpt-score"),
        progress=False,
    )
    assert again.total_added == 0
    assert again.skipped["ratings"] == l2_scores_imported.added["ratings"]
    assert table_counts() == before
    assert am.ImportRecord.objects.filter(ok=True).count() == 2


def test_scores_then_data_files_adds_no_second_copy_of_the_answers(l2_scores_imported):
    result = dataset_import(format="llmeval2", paths=l2_files("data"), progress=False)
    assert result.total_added == 0


def test_score_files_outside_a_known_folder_need_a_named_rater(db, tmp_path):
    src = l2_files("results/gpt-score")[0]
    target = tmp_path / src.name
    target.write_bytes(src.read_bytes())
    with pytest.raises(ImportRefused, match="--rater"):
        dataset_import(format="llmeval2-scores", paths=[target], progress=False)
    result = dataset_import(
        format="llmeval2-scores",
        paths=[target],
        rater="my judge",
        rater_kind="judge",
        study="mine",
        progress=False,
    )
    assert am.Rater.objects.get(name="my judge").ratings.count() == result.added["ratings"] > 0


def test_llmeval1_scores_import_with_placeholder_texts(db):
    path = next((FIXTURES / "llmeval-1" / "data").glob("*.csv"))
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    result = dataset_import(format="llmeval1-scores", paths=[path], progress=False)

    dialogs = {(r["question_uuid"], r["llm_name"]) for r in rows}
    assert result.added["responses"] == len(dialogs)
    assert result.added["scores"] == len(rows)
    q = am.Question.objects.get(external_id=rows[0]["question_uuid"])
    assert q.text == "" and q.meta["placeholder"] is True
    assert q.task_type == rows[0]["question_uuid"].rsplit("_", 1)[0]
    judge = am.Rater.objects.get(name="GPT-4 (LLMEval-1)")
    assert judge.kind == "judge"
    study = am.Study.objects.get(name="LLMEval-1 (imported scores)")
    assert study.rubric.key == "llmeval1" and study.status == "closed"
    assert dataset_import(format="llmeval1-scores", paths=[path], progress=False).total_added == 0


def test_alignbench_maps_subcategories_to_answer_types(db):
    path = FIXTURES / "alignbench" / "data" / "data_v1.1_release.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    result = dataset_import(format="alignbench", paths=[path], progress=False)

    assert am.Dataset.objects.filter(name="AlignBench v1.1").exists()
    assert result.added["questions"] == len(lines)
    rec = lines[0]
    q = am.Question.objects.get(external_id=str(rec["question_id"]))
    assert q.subcategory == rec["subcategory"] and q.task_type == rec["category"]
    assert q.reference == rec["reference"]
    assert q.answer_type == "事实与解释型回答"  # 音乐 -> fact and explanation
    assert all(am.Question.objects.exclude(answer_type="").values_list("answer_type", flat=True))
    assert dataset_import(format="alignbench", paths=[path], progress=False).total_added == 0


def test_two_alignbench_releases_are_not_mixed_into_one_dataset(db):
    paths = sorted((FIXTURES / "alignbench" / "data").glob("*.jsonl"))
    with pytest.raises(ImportRefused, match="different AlignBench releases"):
        dataset_import(format="alignbench", paths=paths, progress=False)
    assert not am.Question.objects.exists()


def test_chinese_alpaca_eval_imports_instructions_outputs_and_judgments(cae_imported):
    root = FIXTURES / "chinese-alpaca-eval"
    n = len((root / "data" / "chinese_alpaca_eval.jsonl").read_text(encoding="utf-8").splitlines())
    models = sorted(p.stem for p in (root / "model_outputs").glob("*.jsonl"))
    assert am.Question.objects.filter(dataset__name="ChineseAlpacaEval").count() == n
    assert sorted(am.LLM.objects.values_list("name", flat=True)) == models
    assert am.Response.objects.count() == n * len(models)
    judgments = [
        json.loads(line)
        for line in (root / "results" / "gpt-4-0613_vs_text-davinci-003.jsonl")
        .read_text()
        .splitlines()
    ]
    ratings = am.Rating.objects.select_related("item__response_a__llm", "assignment")
    assert ratings.count() == len(judgments)
    for rating in ratings:
        # model_1 (gpt-4-0613, shown first) won: the canonical choice names gpt-4's side.
        winner = (
            rating.item.response_a if rating.choice == "A" else rating.item.response_b
        ).llm.name
        assert winner == "gpt-4-0613"
        assert rating.assignment.left_is_a == (rating.item.response_a.llm.name == "gpt-4-0613")
    assert am.Rater.objects.get(name="gpt-4-0613 (ChineseAlpacaEval)").kind == "judge"


def test_chinese_alpaca_eval_outputs_alone_join_the_stored_instructions(db):
    root = FIXTURES / "chinese-alpaca-eval"
    dataset_import(
        format="chinese-alpaca-eval",
        paths=[root / "data" / "chinese_alpaca_eval.jsonl"],
        progress=False,
    )
    result = dataset_import(
        format="chinese-alpaca-eval",
        paths=[root / "model_outputs" / "gpt-4-0613.jsonl"],
        progress=False,
    )
    assert result.added["responses"] == am.Question.objects.count()


def test_generic_jsonl_imports_questions_responses_star_and_pairwise_ratings(db, tmp_path):
    lines = [
        {
            "type": "question",
            "question_id": "q1",
            "text": "1+1?",
            "kind": "objective",
            "reference": "2",
        },
        {"type": "response", "question_id": "q1", "llm": "m1", "text": "2"},
        {"type": "response", "question_id": "q1", "llm": "m2", "text": "3"},
        {
            "type": "rating",
            "question_id": "q1",
            "llm": "m1",
            "rater": "ann",
            "scores": {"correctness": 3, "explanation_correctness": 2},
        },
        {
            "type": "pairwise",
            "question_id": "q1",
            "llm_a": "m2",
            "llm_b": "m1",
            "rater": "judge-x",
            "rater_kind": "judge",
            "choice": "b",
            "left": "m2",
        },
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    result = dataset_import(
        format="jsonl", paths=[path], dataset="mine", rubric="llmeval2", progress=False
    )
    assert result.added["questions"] == 1 and result.added["responses"] == 2
    star = am.Rating.objects.get(rater__name="ann")
    assert star.scores_dict() == {"correctness": 3, "explanation_correctness": 2}
    pair = am.Rating.objects.select_related("item__response_a__llm", "assignment").get(
        rater__name="judge-x"
    )
    winner = (pair.item.response_a if pair.choice == "A" else pair.item.response_b).llm.name
    assert winner == "m1"
    left = pair.item.response_a if pair.assignment.left_is_a else pair.item.response_b
    assert left.llm.name == "m2"
    again = dataset_import(
        format="jsonl", paths=[path], dataset="mine", rubric="llmeval2", progress=False
    )
    assert again.total_added == 0


def test_generic_csv_reads_one_criterion_a_row(db, tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text(
        "type,question_id,text,kind,llm,rater,criterion,score\n"
        "question,q1,Why?,subjective,,,,\n"
        "response,q1,Because.,,m1,,,\n"
        "rating,q1,,,m1,ann,accuracy,4\n"
        "rating,q1,,,m1,ann,fluency,3\n",
        encoding="utf-8",
    )
    dataset_import(format="csv", paths=[path], dataset="mine", rubric="llmeval2", progress=False)
    assert am.Rating.objects.get().scores_dict() == {"accuracy": 4, "fluency": 3}


def test_generic_scores_are_checked_against_the_rubric_range(db, tmp_path):
    import_refused(
        tmp_path / "mine.csv",
        "type,question_id,text,llm,rater,criterion,score\n"
        "question,q1,Why?,,,,\n"
        "response,q1,Because.,m1,,,\n"
        "rating,q1,,m1,ann,fluency,4\n",
        match=r"mine.csv, line 4: score fluency=4 is outside",
        dataset="mine",
    )
    assert table_counts()["Question"] == 0


def test_a_dry_run_counts_but_writes_nothing(db):
    before = table_counts()
    result = dataset_import(format="llmeval2", paths=l2_files("data"), dry_run=True, progress=False)
    assert result.dry_run and result.added["responses"] > 0
    assert table_counts() == before
    assert not am.ImportRecord.objects.exists()


def test_ratings_are_never_imported_into_a_live_study(l2_scores_imported):
    study = am.Study.objects.get(name="LLMEval-2 (imported scores)")
    am.Study.objects.filter(pk=study.pk).update(status=am.Study.Status.LIVE)
    before = table_counts()
    with pytest.raises(ImportRefused, match="is live"):
        dataset_import(
            format="llmeval2-scores",
            paths=l2_files("results/gpt-score"),
            rater="another judge",
            rater_kind="judge",
            progress=False,
        )
    assert table_counts() == before


def test_a_second_rater_imported_later_is_counted_on_the_stored_items(db, tmp_path):
    """The first import creates the items with their counters; the second finds them stored
    and recounts them (and raises the study's target to two raters)."""
    head = "type,question_id,text,llm,llm_a,llm_b,rater,choice\n"
    catalogue = "question,q1,Why?,,,,,\nresponse,q1,A.,m1,,,,\nresponse,q1,B.,m2,,,,\n"
    for k, rater in enumerate(("ann", "bob")):
        path = tmp_path / f"{rater}.csv"
        rows = catalogue if k == 0 else ""
        path.write_text(f"{head}{rows}pairwise,q1,,,m1,m2,{rater},a\n", encoding="utf-8")
        dataset_import(format="csv", paths=[path], dataset="mine", progress=False)
        study = am.Study.objects.get()
        assert list(study.items.values_list("n_ratings", flat=True)) == [k + 1]
        assert study.ratings_per_item == k + 1
