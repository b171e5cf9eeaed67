"""Messages beyond the pages' own text follow the reader's language: the published formats'
import refusals (Chinese on the import page and in the API, English from `import_dataset`, which
runs in English), the API's own validation messages, the services' refusals, and the report's
yes/no and chart labels."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import translation
from rest_framework import serializers

from annotation.api.fields import WholeNumber
from annotation.importers import dataset_preview
from annotation.limits import clean_selection
from annotation.models import Rater, Study
from annotation.roster import invite_reissue
from evaluation.services import judge_run_create
from ranking import charts_quality
from ranking.presenters import fmt
from tests.evaluation.conftest import KEY_ENV
from tests.factories import make_rater
from tests.organizer.test_import_merge_download import dup_dataset

# database_independent: wording in two languages: the same on any database.
pytestmark = [pytest.mark.django_db, pytest.mark.database_independent]

LLMEVAL1_HEADER = "id,question_uuid,llm_name,dialog_uuid,user_id,user_type,metric,score\n"
LLMEVAL2_BAD = [{"question_uuid": "q1", "llm_name": "m", "dialog": [], "type": "C"}]
SAME_INSTRUCTION = '{"instruction_zh": "写一首诗"}\n{"instruction_zh": "写一首诗"}\n'
ONE_INSTRUCTION = '{"instruction_zh": "写一首诗"}\n'
OTHER_OUTPUT = '{"instruction": "写一篇文章", "response": "好"}\n'

# format, files (name: content), the refusal in Chinese, in English
REFUSALS = [
    (
        "llmeval1-scores",
        {"scores_gpt4.csv": LLMEVAL1_HEADER + "1,q_1,m,m_q_1\n"},
        "scores_gpt4.csv, 第 2 行：应有 8 列，实际为 4 列",
        "scores_gpt4.csv, line 2: expected 8 columns, got 4",
    ),
    (
        "llmeval2",
        {"Math_data.json": json.dumps(LLMEVAL2_BAD)},
        "Math_data.json, 第 0 条记录 (问题 q1, LLM m)：type 必须是 'A' 或 'B'，而不是 'C'",
        "Math_data.json, record 0 (question q1, LLM m): type must be 'A' or 'B', not 'C'",
    ),
    (
        "alignbench",
        {"data_v1.1_release.jsonl": '{"question_id": 1, "question": "Q", "subcategory": "未知"}\n'},
        "第 1 行 (question_id 1)：未知的子类别 '未知'（没有对应的回答类型）",
        "line 1 (question_id 1): unknown subcategory '未知' (no answer type for it)",
    ),
    (
        "chinese-alpaca-eval",
        {"chinese_alpaca_eval.jsonl": SAME_INSTRUCTION},
        "chinese_alpaca_eval.jsonl, 第 2 行：指令与问题 0001 相同（输出按指令匹配，指令必须唯一）",
        "chinese_alpaca_eval.jsonl, line 2: the same instruction as question 0001 (outputs are",
    ),
    (
        "chinese-alpaca-eval",
        {"chinese_alpaca_eval.jsonl": ONE_INSTRUCTION, "gpt-4.jsonl": OTHER_OUTPUT},
        "gpt-4.jsonl, 第 1 行：指令 '写一篇文章' 不是该数据集的问题",
        "gpt-4.jsonl, line 1: the instruction '写一篇文章' is not one of the dataset's questions",
    ),
]


@pytest.mark.parametrize(
    ("fmt_name", "files", "chinese", "english"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_the_published_formats_refuse_in_the_readers_language(
    tmp_path, fmt_name, files, chinese, english
):
    paths = [tmp_path / name for name in files]
    for path, content in zip(paths, files.values(), strict=True):
        path.write_text(content, encoding="utf-8")
    with translation.override("zh-hans"):
        shown = dataset_preview(format=fmt_name, paths=paths, progress=False)["errors"]
    assert len(shown) == 1 and chinese in shown[0], shown
    assert english.split(": ", 1)[1][:20] not in shown[0]
    assert " line " not in shown[0] and " record " not in shown[0]
    with translation.override("en"):
        said = dataset_preview(format=fmt_name, paths=paths, progress=False)["errors"]
    assert english in said[0], said


def test_the_api_validates_in_the_requests_language(organizer_client, make_study):
    study = make_study(["Fine?"], n_llms=1)
    url = reverse("api-checks-gold", kwargs={"study_id": study.pk})
    english = organizer_client.post(url, {}, content_type="application/json")
    assert english.status_code == 400
    assert "Give either records, or content with format." in english.content.decode()
    organizer_client.cookies["django_language"] = "zh-hans"
    chinese = organizer_client.post(url, {"content": "x"}, content_type="application/json")
    assert chinese.status_code == 400
    assert chinese.json()["format"] == ["请给出 content 的格式：csv 或 json。"]
    neither = organizer_client.post(url, {}, content_type="application/json").content.decode()
    assert "请给出 records，或给出 content 及 format（二选一）。" in neither
    assert "Give either" not in neither
    with translation.override("zh-hans"), pytest.raises(serializers.ValidationError) as refused:
        WholeNumber().to_internal_value("٣")
    assert refused.value.detail == ["请用数字 0-9 填写。"]


def test_a_closed_study_cannot_be_launched_in_chinese(organizer_client, make_study):
    study = make_study(["Fine?"], n_llms=1)
    Study.objects.filter(pk=study.pk).update(status="closed")
    organizer_client.cookies["django_language"] = "zh-hans"
    url = reverse("organize:study_status", args=[study.pk, "launch"])
    html = organizer_client.post(url, follow=True).content.decode()
    assert "状态为“已结束”的项目不能变为“进行中”。" in html
    assert "cannot become" not in html


def test_the_roster_refuses_a_crowd_rater_in_chinese(organizer):
    crowd = make_rater(pool="crowd")
    with translation.override("zh-hans"), pytest.raises(Exception) as refused:
        invite_reissue(rater=crowd, by=organizer)
    assert "此处只管理现场标注员的账号。" in str(refused.value)


def test_report_yes_no_and_chart_labels_in_the_pages_words():
    df = pd.DataFrame(
        {"rater_id": ["r1", "r2"], "reliability": [0.9, 0.7], "mode": ["pairwise", "star"]}
    )
    df["pool"] = ["crowd", "judge"]
    with translation.override("zh-hans"):
        assert (fmt(True), fmt(False)) == ("是", "否")
        svg = charts_quality.reliability(df)
    assert svg is not None
    assert "两两比较 · r1 (众包)" in svg and "星级 · r2 (LLM 评审)" in svg
    assert "(crowd)" not in svg and "pairwise ·" not in svg


def test_judge_run_refusals_in_chinese_on_the_api_and_the_page(
    organizer_client, make_study, make_judge
):
    study = make_study(["Fine?"], n_llms=2)
    judge = make_judge(name="zh-judge")
    queued = judge_run_create(study=study, judge=judge)
    organizer_client.cookies["django_language"] = "zh-hans"
    start = reverse("judges_api:run_start")
    body = {"study": study.pk, "judge": judge.pk}
    both = organizer_client.post(start, {**body, "both_orders": True}, "application/json")
    assert both.status_code == 400
    assert both.json()["both_orders"] == ["双向评判只适用于两两比较的项目。"]
    again = organizer_client.post(start, body, "application/json")
    assert again.status_code == 400
    assert f"该评审在本项目上的运行 {queued.pk} 仍在进行中：请先取消或继续该运行。" in str(
        again.json()
    )
    reparse = organizer_client.post(reverse("judges_api:run_reparse", args=[queued.pk]))
    assert reparse.status_code == 400 and reparse.json()["detail"] == ["该运行仍在进行中。"]
    cancel = reverse("judges:run_cancel", args=[queued.pk])
    organizer_client.post(cancel)
    html = organizer_client.post(cancel, follow=True).content.decode()
    assert "该运行的状态为“已取消”，无需取消。" in html
    assert "nothing to cancel" not in html and "still active" not in str(again.json())


def test_judge_names_and_question_search_refused_in_chinese(organizer_client, organizer, fake):
    Rater.objects.create(kind="human", pool="public", name="Ann", owner=organizer)
    organizer_client.cookies["django_language"] = "zh-hans"
    url = reverse("judges_api:judge_create")
    body = {"base_url": fake.base_url, "api_key_env": KEY_ENV}
    taken = organizer_client.post(url, {**body, "name": "Ann"}, "application/json")
    assert taken.status_code == 400
    assert taken.json()["name"] == ["你的另一个评分者已使用名称 'Ann'。"]
    search = organizer_client.get("/api/questions/", {"search": "x" * 1001})
    assert search.status_code == 400
    assert search.json()["search"] == ["搜索内容最多 1000 个字符。"]


def test_llm_merge_refusals_in_chinese(organizer_client, organizer):
    dataset, gpt4, gpt40 = dup_dataset(organizer, clash=True)
    organizer_client.cookies["django_language"] = "zh-hans"
    url = reverse("organize:dataset_llm_merge", args=[dataset.pk])
    merge = {"source": gpt40.pk, "target": gpt4.pk, "confirm": "merge"}
    html = organizer_client.post(url, merge, follow=True).content.decode()
    assert "&#x27;GPT4.0&#x27; 和 &#x27;GPT4&#x27; 都回答了问题 q0：合并后" in html
    assert "both answered" not in html


def test_selection_and_named_rows_refused_in_chinese(organizer):
    with translation.override("zh-hans"):
        with pytest.raises(ValidationError) as shape:
            clean_selection({"llms": "GPT4"})
        with pytest.raises(ValidationError) as unknown:
            clean_selection({"colour": ["red"]})
        Rater.objects.create(kind="human", pool="public", name="Bo", owner=organizer)
        with pytest.raises(ValidationError) as named:
            Rater(kind="human", pool="public", name="Bo", owner=organizer).full_clean()
    assert shape.value.messages == ["selection.llms 必须是最多 100000 个文本的列表。"]
    assert unknown.value.messages[0].startswith("selection 含有未知的键（colour）")
    assert named.value.message_dict["name"] == ["名为 'Bo' 的评分者已存在。"]
    with pytest.raises(ValidationError, match="selection must be an object"):
        clean_selection("x")


def test_a_file_name_with_place_words_is_kept_as_it_is_in_chinese():
    """Only the place's own words are translated: "my question list line 2.jsonl" is a file
    name, which the Chinese message must name as it is."""
    from annotation.importers.bundle import message

    said = message("%(where)s: expected an object", where="my question list line 2.jsonl, line 3")
    with translation.override("zh-hans"):
        assert str(said) == "my question list line 2.jsonl, 第 3 行：应为一个对象"
    where = "a.json, record 0 (question line 5, LLM m)"
    with translation.override("zh-hans"):
        assert str(message("%(where)s: x", where=where)).startswith(
            "a.json, 第 0 条记录 (问题 line 5, LLM m)"
        )
