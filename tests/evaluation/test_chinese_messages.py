"""Messages beyond the pages' own text follow the reader's language: the published formats'
import refusals (Chinese on the import page and in the API, English from `import_dataset`, which
runs in English), the API's own validation messages, the services' refusals, and the report's
yes/no and chart labels."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from django.urls import reverse
from django.utils import translation
from rest_framework import serializers

from annotation.api.fields import WholeNumber
from annotation.importers import dataset_preview
from annotation.models import Study
from annotation.roster import invite_reissue
from ranking import charts_quality
from ranking.presenters import fmt
from tests.factories import make_rater

pytestmark = pytest.mark.django_db

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
