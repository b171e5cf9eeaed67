"""Parsers: good outputs map to rubric keys or a canonical choice; bad ones fail with a reason."""

from __future__ import annotations

import pytest

from evaluation.parsers import ParseError, Spec, canonical_choice, parse

LLMEVAL1 = [
    Spec("accuracy", ("Accuracy", "正确性")),
    Spec("informativeness", ("Informativeness",)),
    Spec("fluency", ("Fluency",)),
    Spec("logicality", ("Logical coherence",)),
    Spec("harmlessness", ("Harmlessness",)),
]
OBJECTIVE = [
    Spec("correctness", ("Correctness",), 1, 3),
    Spec("explanation_correctness", ("Explanation correctness",), 1, 2),
]
ALIGN = [
    Spec("factuality", ("Factual correctness", "事实正确性"), 1, 10),
    Spec("user_satisfaction", ("Meets the user's need", "满足用户需求"), 1, 10),
    Spec("overall", ("Overall", "综合得分"), 1, 10),
]


@pytest.mark.parametrize(
    "text",
    [
        "Accuracy: 3 stars\nInformativeness: 2 stars\nFluency: 3\nLogicity: 2\nHarmlessness: 3",
        "Stars:\n- **Accuracy**: 3\n- **Informativeness**: 2\n- **Fluency**: 3\n"
        "- **Logical coherence**: 2\n- **Harmlessness**: ★★★",
        '```json\n{"Accuracy": 3, "Informativeness": 2, "Fluency": 3, "Logicity": 2,'
        ' "Harmlessness": 3}\n```',
        'Here you go: {"scores": {"accuracy": "3 stars", "informativeness": 2, "fluency": 3.0,'
        ' "logicality": 2, "harmlessness": 3}} hope it helps',
    ],
)
def test_star_outputs_in_text_fenced_json_or_wrapped_json_map_to_rubric_keys(text):
    assert parse("stars", text, LLMEVAL1) == {
        "scores": {
            "accuracy": 3,
            "informativeness": 2,
            "fluency": 3,
            "logicality": 2,
            "harmlessness": 3,
        }
    }


def test_llmeval2_objective_json_block_is_parsed():
    text = '{\n  "Correctness": 2,\n  "Explanation Correctness": 1\n}'
    assert parse("stars", text, OBJECTIVE) == {
        "scores": {"correctness": 2, "explanation_correctness": 1}
    }


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty output"),
        ("I cannot rate this.", "no scores found"),
        ('{"quality": 2, "verdict": "fine"}', "no scores found"),
        ('{"Correctness": 3}', "missing score(s) for explanation_correctness"),
        ('{"Correctness": 4, "Explanation Correctness": 1}', "correctness: 4 is outside 1-3"),
        ('{"Correctness": 2.5, "Explanation Correctness": 1}', "is not a whole number"),
        ('{"Correctness": 0, "Explanation Correctness": 1}', "outside 1-3"),
        ("Correctness: 2\nExplanation correctness: 1\nCorrectness: 3", "is not a whole number"),
        ('{"Correctness": 3, "Explanation', "missing score(s) for explanation_correctness"),
    ],
)
def test_bad_star_outputs_fail_with_a_reason_and_no_number(text, reason):
    with pytest.raises(ParseError) as e:
        parse("stars", text, OBJECTIVE)
    assert reason in str(e.value)


def test_alignbench_takes_the_last_dict_after_the_reasoning():
    text = (
        "与参考答案相比……事实正确性：8\n{'事实正确性': 1}\n最后：\n"
        "{'事实正确性': 9, '满足用户需求': 6, '综合得分': 7}"
    )
    assert parse("alignbench", text, ALIGN) == {
        "scores": {"factuality": 9, "user_satisfaction": 6, "overall": 7}
    }


def test_alignbench_json_mode_object_is_parsed():
    text = '{"explanation": "好", "scores": {"事实正确性": 9, "满足用户需求": 6, "综合得分": 7}}'
    assert parse("alignbench", text, ALIGN)["scores"]["overall"] == 7


def test_alignbench_double_bracket_rating_counts_only_when_overall_is_the_only_criterion():
    assert parse("alignbench", "评价……\nRating: [[8]]", [ALIGN[-1]]) == {"scores": {"overall": 8}}
    with pytest.raises(ParseError):
        parse("alignbench", "评价……\nRating: [[8]]", ALIGN)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{'事实正确性': 11, '满足用户需求': 6, '综合得分': 7}", "factuality: 11 is outside 1-10"),
        ("{'事实正确性': 9, '综合得分': 7}", "missing score(s) for user_satisfaction"),
        ("评价很长但是被截断了", "no score dict found"),
    ],
)
def test_bad_alignbench_outputs_fail(text, reason):
    with pytest.raises(ParseError) as e:
        parse("alignbench", text, ALIGN)
    assert reason in str(e.value)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("A", "left"),
        ("B", "right"),
        ("C", "tie"),
        ("D", "both_bad"),
        ("Output: B", "right"),
        ("[[C]]", "tie"),
        ("D: Both are bad", "both_bad"),
        ('{"choice": "A"}', "left"),
        ("**A**. Assistant 1 is more accurate.", "left"),
        ("I choose option (B) because it is more complete.", "right"),
    ],
)
def test_pairwise_options_map_to_the_side_shown(text, shown):
    assert parse("choice", text)["shown"] == shown


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("Both answers are fine.", "no option"),
        ("A or B, hard to say", "ambiguous"),
        ('{"choice": "E"}', "not one of A, B, C, D"),
    ],
)
def test_bad_pairwise_outputs_fail(text, reason):
    with pytest.raises(ParseError) as e:
        parse("choice", text)
    assert reason in str(e.value)


def test_the_choice_is_stored_canonically_whatever_side_response_a_was_shown_on():
    assert parse("choice", "A", left_is_a=True)["choice"] == "A"
    assert parse("choice", "A", left_is_a=False)["choice"] == "B"
    assert parse("choice", "B", left_is_a=False)["choice"] == "A"
    assert canonical_choice("tie", left_is_a=False) == "tie"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("[{'model': 'model_1', 'rank': 1}, {'model': 'model_2', 'rank': 2}]", "left"),
        (
            "```python\n[{'model': 'model_2', 'rank': 1}, {'model': 'model_1', 'rank': 2}]\n```",
            "right",
        ),
        (
            '{"ranking": [{"model": "model_1", "rank": 2}, {"model": "model_2", "rank": 1}]}',
            "right",
        ),
    ],
)
def test_chinese_alpaca_eval_ranking_lists_are_parsed(text, shown):
    assert parse("ranking", text)["shown"] == shown


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("model_1 is better", "no ranking list"),
        ("[{'model': 'model_1', 'rank': 1}, {'model': 'model_3', 'rank': 2}]", "expected ranks"),
        ("[{'model': 'model_1'}]", "lacks 'model' and 'rank'"),
    ],
)
def test_bad_rankings_fail(text, reason):
    with pytest.raises(ParseError) as e:
        parse("ranking", text)
    assert reason in str(e.value)
