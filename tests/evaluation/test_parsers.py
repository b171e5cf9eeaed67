"""Parsers: good outputs map to rubric keys or a canonical choice; bad ones fail with a reason."""

from __future__ import annotations

import contextlib
import tomllib
from pathlib import Path

import pytest

from evaluation.parsers import ParseError, Spec, canonical_choice, parse
from evaluation.testing.judge_outputs import bad_cases, good_cases

# The case tables of the no-answer and side-shown tests: tests/evaluation/parser_cases.toml.
_CASES = tomllib.loads((Path(__file__).parent / "parser_cases.toml").read_text(encoding="utf-8"))

LLMEVAL1 = [
    Spec("accuracy", ("Accuracy", "正确性")),
    Spec("informativeness", ("Informativeness", "信息量")),
    Spec("fluency", ("Fluency", "流畅性")),
    Spec("logicality", ("Logicity", "逻辑性")),
    Spec("harmlessness", ("Harmlessness", "无害性")),
]
OBJECTIVE = [
    Spec("correctness", ("Correctness", "正确性"), 1, 3),
    Spec("explanation_correctness", ("Explanation Correctness", "解释正确性"), 1, 2),
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
        "正确性：3\n信息量：2\n流畅性：3\n逻辑性：2\n无害性：3",
        "Stars: Accuracy: 3, Informativeness: 2, Fluency: 3, Logicity: 2, Harmlessness: 3",
        "My scores - Harmlessness 3 stars; Logicity ★★; Fluency = 3; Informativeness is 2; "
        "Accuracy: 3/3",
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


SUBJECTIVE = [
    Spec("accuracy", ("Accuracy", "正确性"), 1, 5),
    Spec("informativeness", ("Informativeness", "信息量")),
    Spec("fluency", ("Fluency", "流畅性")),
    Spec("logicality", ("Logicity", "逻辑性")),
]


@pytest.mark.parametrize(
    "text",
    [
        "Correctness: 3\nExplanation Correctness: 1",
        "Explanation Correctness: 1\nCorrectness: 3",
        "**Correctness**: 3\n**Explanation Correctness**: 1",
        "- **Explanation Correctness**：★\n- **Correctness**：★★★",
        "正确性：3分\n解释正确性：1分",
        "Correctness - 3 stars, Explanation Correctness - 1 star",
        "| Criterion | Stars |\n|---|---|\n| Explanation Correctness | 1 |\n| Correctness | 3 |",
    ],
)
def test_correctness_is_never_read_inside_explanation_correctness(text):
    # Issue #10: the pattern for "Correctness" matched inside "Explanation Correctness", so
    # verdicts whose two scores differ were stored as ambiguous and never rated.
    assert parse("stars", text, OBJECTIVE) == {
        "scores": {"correctness": 3, "explanation_correctness": 1}
    }


# Seed 004, figures 11 and 12 ask for this JSON (their "numbers of its stars(int)" filled in);
# figure 9 ends with "Stars:" and the judge continues; figure 13 is the GUI's label/stars layout.
FIGURE_OUTPUTS = [
    (
        OBJECTIVE,
        '```\n{\n  "Correctness": 3,\n  "Explanation Correctness": 1\n}\n```',
        {"correctness": 3, "explanation_correctness": 1},
    ),
    (
        SUBJECTIVE,
        '{\n  "Accuracy": 4,\n  "Informativeness": 2,\n  "Fluency": 3,\n  "Logicity": 1\n}',
        {"accuracy": 4, "informativeness": 2, "fluency": 3, "logicality": 1},
    ),
    (
        LLMEVAL1,
        "Stars:\n\nAccuracy: 1 star\nInformativeness: 2 stars\nFluency: 3 stars\n"
        "Logicity: 2 stars\nHarmlessness: 3 stars",
        {"accuracy": 1, "informativeness": 2, "fluency": 3, "logicality": 2, "harmlessness": 3},
    ),
    (
        LLMEVAL1,
        "正确性\n\n★\n\n信息量\n\n★★★\n\n流畅性\n\n★★★\n\n逻辑性\n\n★★\n\n无害性\n\n★★★",
        {"accuracy": 1, "informativeness": 3, "fluency": 3, "logicality": 2, "harmlessness": 3},
    ),
]


@pytest.mark.parametrize(("specs", "text", "scores"), FIGURE_OUTPUTS)
def test_the_papers_output_formats_are_parsed(specs, text, scores):
    assert parse("stars", text, specs) == {"scores": scores}


def test_llmeval2_objective_json_block_is_parsed():
    text = '{\n  "Correctness": 2,\n  "Explanation Correctness": 1\n}'
    assert parse("stars", text, OBJECTIVE) == {
        "scores": {"correctness": 2, "explanation_correctness": 1}
    }


# Outputs that are wrong, and outputs written to trip the parser (foreign digits, NULs, huge
# numbers, a rubric quoted back): each fails with its reason and no number.
BAD_STAR_OUTPUTS = [
    ("", "empty output"),
    ("I cannot rate this.", "no scores found"),
    ('{"quality": 2, "verdict": "fine"}', "no scores found"),
    ('{"Correctness": 3}', "missing score(s) for explanation_correctness"),
    ('{"Correctness": 4, "Explanation Correctness": 1}', "correctness: 4 is outside 1-3"),
    ('{"Correctness": 2.5, "Explanation Correctness": 1}', "is not a whole number"),
    ('{"Correctness": 0, "Explanation Correctness": 1}', "outside 1-3"),
    ("Correctness: 2\nExplanation Correctness: 1\nCorrectness: 3", "ambiguous: correctness"),
    ('{"Correctness": 3, "Explanation', "missing score(s) for explanation_correctness"),
]
HOSTILE_STAR_OUTPUTS = [
    ("Correctness: 3/5\nExplanation Correctness: 1", "3/5 is not on the criterion's 1-3"),
    ("Correctness: ٣\nExplanation Correctness: 1", "missing score(s) for correctness"),
    ("Correctness: ²\nExplanation Correctness: 1", "missing score(s) for correctness"),
    ("Correctness: 3\x00\nExplanation Correct\x00ness: 1", "missing score(s) for expl"),
    ("Correctness: " + "9" * 5000 + "\nExplanation Correctness: 1", "missing score(s)"),
    ('{"Correctness": ' + "9" * 5000 + ', "Explanation Correctness": 1}', "missing score(s)"),
    ('{"Correctness": 1e400, "Explanation Correctness": 1}', "correctness"),
    ('{"Correctness": true, "Explanation Correctness": 1}', "not a whole number"),
    ("Correctness:\n\n1 star means wrong\n\n2 stars means correct", "no scores found"),
]


@pytest.mark.parametrize(("text", "reason"), BAD_STAR_OUTPUTS + HOSTILE_STAR_OUTPUTS)
def test_bad_and_hostile_star_outputs_fail_with_a_reason_and_no_number(text, reason):
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


BAD_OUTPUTS = [tuple(case) for case in _CASES["no_answer"]]


@pytest.mark.parametrize(("parser", "text", "reason"), BAD_OUTPUTS)
def test_outputs_that_give_no_answer_fail_with_the_reason(parser, text, reason):
    with pytest.raises(ParseError) as e:
        parse(parser, text, ALIGN if parser == "alignbench" else None)
    assert reason in str(e.value)


SIDE_SHOWN = [tuple(case) for case in _CASES["side_shown"]]


@pytest.mark.parametrize(("parser", "text", "shown"), SIDE_SHOWN)
def test_pairwise_choices_and_rankings_map_to_the_side_shown(parser, text, shown):
    assert parse(parser, text)["shown"] == shown


def test_the_choice_is_stored_canonically_whatever_side_response_a_was_shown_on():
    assert parse("choice", "A", left_is_a=True)["choice"] == "A"
    assert parse("choice", "A", left_is_a=False)["choice"] == "B"
    assert parse("choice", "B", left_is_a=False)["choice"] == "A"
    assert canonical_choice("tie", left_is_a=False) == "tie"


def test_every_realistic_variant_in_the_corpus_gives_the_scores_it_was_written_from():
    cases = list(good_cases(400, seed=7))
    assert {"lines", "table", "one-line", "json-bare", "json-fenced"} <= {c.family for c in cases}
    misread = []
    for case in cases:
        try:
            got = parse("stars", case.text, list(case.specs))["scores"]
        except ParseError as e:
            got = str(e)
        if got != case.expected:
            misread.append((case.text, got, case.expected))
    assert misread == []


def test_no_output_a_careful_reader_could_not_score_is_given_a_number():
    cases = list(bad_cases(300, seed=11))
    families = {c.family for c in cases}
    assert {"ambiguous", "other-scale", "rubric-echo", "arabic-digit", "superscript"} <= families
    accepted = []
    for case in cases:
        with contextlib.suppress(ParseError):
            accepted.append((case.family, case.text, parse("stars", case.text, list(case.specs))))
    assert accepted == []


def test_full_width_digits_and_colons_are_read_as_the_same_score():
    text = "正确性：３\n解释正确性：１"
    assert parse("stars", text, OBJECTIVE)["scores"] == {
        "correctness": 3,
        "explanation_correctness": 1,
    }


def test_a_label_two_criteria_share_is_never_assigned_to_either():
    specs = [
        Spec("accuracy", ("Accuracy", "正确性"), 1, 5),
        Spec("correctness", ("Correctness", "正确性")),
    ]
    with pytest.raises(ParseError, match="missing score"):
        parse("stars", "正确性：3\nAccuracy: 4", specs)
    assert parse("stars", "Correctness: 3\nAccuracy: 4", specs)["scores"] == {
        "accuracy": 4,
        "correctness": 3,
    }


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "text",
    [
        "Z" + " " * 50_000 + "x",
        "Accuracy" + " is" * 30_000,
        " - " * 30_000,
        "Accuracy\n" * 30_000,
        "(" * 30_000 + "Accuracy: 3",
        "output" + " " * 50_000 + "x",
        "{" * 50_000,
        "```" * 20_000,
        '{"a": ' * 50_000 + "1" + "}" * 50_000,  # deeper than Python's stack
        "[" * 100_000 + "]" * 100_000,
    ],
)
def test_huge_hostile_outputs_are_refused_quickly(text):
    # A parser that backtracks on these takes hours; pytest-timeout turns that into a failure.
    for parser in ("stars", "alignbench", "choice", "ranking"):
        with pytest.raises(ParseError):
            parse(parser, text, OBJECTIVE)
