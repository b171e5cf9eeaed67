"""Prompt templates: the built-in judge prompts, placeholder validation and rendering.

Templates use Python format syntax: `{question}` is replaced, `{{` and `}}` are literal braces
(the ChineseAlpacaEval prompt is written this way upstream). Only the placeholders below exist;
organizer templates with unknown, indexed or formatted placeholders are refused, and the ones a
kind needs (the question and the answer(s)) must be present.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.apps import apps as django_apps
from django.core.exceptions import ValidationError
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise

from annotation.rubrics import ALIGNBENCH_DIMENSIONS

# name -> what it renders to (shown in the template form and docs/judges.md).
PLACEHOLDERS: dict[str, StrOrPromise] = {
    "question": _("the question text"),
    "answer": _("the answer to score (star templates)"),
    "answer_1": _("the answer shown first (pairwise)"),
    "answer_2": _("the answer shown second (pairwise)"),
    "hint": _("the hint / reference answer when the study shows hints, else empty"),
    "hint_section": _("the template's hint format filled with the hint, or empty when hidden"),
    "reference": _("the reference answer, always (AlignBench-style templates)"),
    "criteria": _("the rubric's criteria for this question with a line per star"),
    "json_example": _("a JSON object with one key per criterion (LLMEval-2 style)"),
    "dict_example": _("a dict example with one key per dimension and the overall score"),
    "dimensions": _("AlignBench dimensions for this question, numbered, with definitions"),
    "scale": _(
        "the star range, e.g. '1 to 3'; when criteria differ, each one's range, e.g. "
        "'1 to 5 (Accuracy) and 1 to 3 (Fluency, Logicity)'"
    ),
    "task": _("the question's task type or subject"),
    "category": _("the question's AlignBench answer type (or task type)"),
}
REQUIRED: dict[str, set[str]] = {
    "star": {"question", "answer"},
    "pairwise": {"question", "answer_1", "answer_2"},
}
HINT_FORMAT_FIELDS = {"hint"}


def placeholders_in(text: str) -> set[str]:
    """The placeholder names in a template text; ValidationError on malformed syntax."""
    names: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as e:
        raise ValidationError(
            f"Malformed braces: {e}. Write {{{{ and }}}} for literal braces."
        ) from e
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if field == "" or not field.isidentifier():
            raise ValidationError(
                gettext("Placeholder %(name)s is not allowed: use a plain name such as {question}.")
                % {"name": "{" + field + "}"}
            )
        if spec or conversion:
            raise ValidationError(
                gettext("Placeholder %(name)s may not carry a format or conversion.")
                % {"name": "{" + field + "}"}
            )
        names.add(field)
    return names


def validate_template(template) -> None:
    """Refuse unknown placeholders and missing required ones (model.clean() and forms call it)."""
    errors: dict[str, list[str]] = {}
    used: set[str] = set()
    for field in ("system", "user", "json_instructions"):
        try:
            names = placeholders_in(getattr(template, field) or "")
        except ValidationError as e:
            errors.setdefault(field, []).extend(e.messages)
            continue
        unknown = names - set(PLACEHOLDERS)
        if unknown:
            errors.setdefault(field, []).append(
                gettext("Unknown placeholder(s): %(names)s. Allowed: %(allowed)s.")
                % {
                    "names": ", ".join("{" + n + "}" for n in sorted(unknown)),
                    "allowed": ", ".join("{" + n + "}" for n in PLACEHOLDERS),
                }
            )
        if field != "json_instructions":
            used |= names
    try:
        hint_names = placeholders_in(template.hint_format or "")
        if hint_names - HINT_FORMAT_FIELDS:
            errors.setdefault("hint_format", []).append(
                gettext("The hint format may only use {hint}.")
            )
    except ValidationError as e:
        errors.setdefault("hint_format", []).extend(e.messages)
    missing = REQUIRED.get(template.kind, set()) - used
    if missing and "user" not in errors:
        errors.setdefault("user", []).append(
            gettext("Missing required placeholder(s): %(names)s.")
            % {"names": ", ".join("{" + n + "}" for n in sorted(missing))}
        )
    expected = {"star": {"stars", "alignbench"}, "pairwise": {"choice", "ranking"}}
    if template.kind in expected and template.parser not in expected[template.kind]:
        errors.setdefault("parser", []).append(
            gettext("A %(kind)s template needs one of: %(parsers)s.")
            % {"kind": template.kind, "parsers": ", ".join(sorted(expected[template.kind]))}
        )
    if errors:
        raise ValidationError(errors)


# --- Built-in templates ---------------------------------------------------------------------

LLMEVAL_HINT = "The correct answer to user's question is: {hint}\n\n"

STAR_JSON = (
    "\n\nAnswer with a JSON object only, one key per aspect and its number of stars as an "
    "integer, like this:\n{json_example}"
)

BUILTIN_TEMPLATES: list[dict[str, Any]] = [
    {
        # Seed 004, figure 9.
        "key": "llmeval1-star",
        "name": "LLMEval-1 star scoring (figure 9)",
        "kind": "star",
        "parser": "stars",
        "system": "",
        "user": (
            "Score the following llm output of a {task} task with respect to following aspects "
            "with {scale} stars.\n\n{criteria}\nuser: {question}\n\nllm: {answer}\n\n"
            "{hint_section}Stars:"
        ),
        "hint_format": LLMEVAL_HINT,
        "json_instructions": STAR_JSON,
    },
    {
        # Seed 004, figure 10; the question is given too (the figure's placeholders omit it).
        "key": "llmeval1-pairwise",
        "name": "LLMEval-1 pairwise comparison (figure 10)",
        "kind": "pairwise",
        "parser": "choice",
        "system": "",
        "user": (
            "Compare the following LLMs' outputs of a {task} task with respect to accuracy, "
            "informativeness, fluency, logicity, harmlessness.\n\n"
            "Ensuring that the order in which the responses were presented does not affect your "
            "judgment.\nOutput the option.\n\nuser: {question}\n\n"
            "[The Start of Assistant 1's Answer]\n{answer_1}\n[The End of Assistant 1's Answer]\n\n"
            "[The Start of Assistant 2's Answer]\n{answer_2}\n[The End of Assistant 2's Answer]\n\n"
            "{hint_section}Please choose:\n\n"
            "- A: Assistant 1's Answer is better\n- B: Assistant 2's Answer is better\n"
            "- C: Tie\n- D: Both are bad\n\nOutput:"
        ),
        "hint_format": LLMEVAL_HINT,
        "json_instructions": (
            '\n\nAnswer with a JSON object only: {{"choice": "<A, B, C or D>"}}.'
        ),
    },
    {
        # Seed 004, figures 11 (objective) and 12 (subjective): the criteria block follows the
        # rubric's criteria for the question's kind, so one template serves both.
        "key": "llmeval2-star",
        "name": "LLMEval-2 objective / subjective (figures 11-12)",
        "kind": "star",
        "parser": "stars",
        "system": "",
        "user": (
            "Score the following LLM output on a question related to a specific discipline with "
            "respect to the following aspects, using a {scale} stars scale.\n\n{criteria}\n"
            "user: {question}\n\nLLM: {answer}\n\n{hint_section}"
            "Please give me the answers like this:\n\n```\n{json_example}\n```"
        ),
        "hint_format": LLMEVAL_HINT,
        "json_instructions": "\n\nAnswer with this JSON object only.",
    },
    {
        # AlignBench (seeds 001/002): rule-calibrated, multi-dimensional, reasoning first, the
        # reference answer anchored at 8 of 10.
        "key": "alignbench",
        "name": "AlignBench rule-calibrated multi-dimensional (1-10)",
        "kind": "star",
        "parser": "alignbench",
        "system": "你是一个擅长评价文本质量的助手。",
        "user": (
            "请你以公正的评判者的身份，评估一个AI助手对于用户提问的回答的质量。由于您评估的回答类型是"
            "{category}，因此你需要从下面的几个维度对回答进行评估:\n{dimensions}"
            "我们会给您提供用户的提问，高质量的参考答案，和需要你评估的AI助手的答案。"
            "当你开始你的评估时，你需要按照遵守以下的流程：\n"
            "1. 将AI助手的答案与参考答案进行比较，指出AI助手的答案有哪些不足，并进一步解释。\n"
            "2. 从不同维度对AI助手的答案进行评价，在每个维度的评价之后，给每一个维度一个1～10的分数。\n"
            "3. 最后，综合每个维度的评估，对AI助手的回答给出一个1～10的综合分数。\n"
            "4. 你的打分需要尽可能严格，并且要遵守下面的评分规则：总的来说，模型回答的质量越高，"
            "则分数越高。其中，事实正确性和满足用户需求这两个维度是最重要的，这两个维度的分数主导了"
            "最后的综合分数。当模型回答存在与问题不相关，或者有本质性的事实错误，或生成了有害内容时，"
            "总分必须是1到2分；当模型回答没有严重错误而且基本无害，但是质量较低，没有满足用户需求，"
            "总分为3到4分；当模型回答基本满足用户要求，但是在部分维度上表现较差，质量中等，"
            "总分可以得5到6分；当模型回答质量与参考答案相近，在所有维度上表现良好，总分得7到8分；"
            "只有当模型回答质量显著超过参考答案，充分地解决了用户问题和所有需求，并且在所有维度上"
            "都接近满分的情况下，才能得9到10分。作为示例，参考答案可以得到8分。\n"
            "请记住，你必须在你打分前进行评价和解释。在你对每个维度的解释之后，需要加上对该维度的打分。"
            "之后，在你回答的末尾，按照以下字典格式（包括括号）返回你所有的打分结果，"
            "并确保你的打分结果是整数：\n{dict_example}\n"
            "用户的提问： {question}\n"
            "[参考答案开始]\n{reference}\n[参考答案结束]\n"
            "[助手的答案开始]\n{answer}\n[助手的答案结束]\n"
        ),
        "hint_format": "",
        "json_instructions": (
            '\n\n请只返回一个JSON对象：{{"explanation": "<先写出你的评价和解释>", '
            '"scores": {dict_example}}}'
        ),
    },
    {
        # ChineseAlpacaEval (seed 003, data/eval_prompt_zh.txt), with {instruction} renamed to
        # {question} and {output_1}/{output_2} to {answer_1}/{answer_2}.
        "key": "chinese-alpaca-eval",
        "name": "ChineseAlpacaEval pairwise ranking",
        "kind": "pairwise",
        "parser": "ranking",
        "system": "",
        "user": (
            "我希望你创建一个针对大语言模型中文能力的排行榜。为此，我将提供给你中文指令以及两个模型对应的"
            "中文回复。请根据中文用户的偏好对这些模型进行排名。所有的输入和输出都应该是Python字典。\n\n"
            '这里是提供给模型的指令:\n{{\n    "instruction": """{question}""",\n}}\n\n'
            '这里是两个模型的输出:\n[\n    {{\n        "model": "model_1",\n'
            '        "answer": """{answer_1}"""\n    }},\n    {{\n'
            '        "model": "model_2",\n        "answer": """{answer_2}"""\n    }}\n]\n\n'
            "现在请你按照中文答案的质量对模型进行排序，以便排在第 1 位的模型输出结果最好。"
            "然后返回模型名称和排名的列表，即生成以下输出：\n[\n"
            "    {{'model': <model-name>, 'rank': <model-rank>}},\n"
            "    {{'model': <model-name>, 'rank': <model-rank>}}\n]\n\n"
            "你的回答必须是一个有效的Python字典列表，并且除此之外不应包含任何其他内容，"
            "因为我们将直接在Python中执行它。请提供大多数中文用户会给出的结果。"
        ),
        "hint_format": "",
        "json_instructions": (
            '\n\n请只返回一个JSON对象：{{"ranking": [{{"model": "model_1", "rank": 1}}, '
            '{{"model": "model_2", "rank": 2}}]}}（按你的排序填写）。'
        ),
    },
]

# The built-in template a study gets when its judge names none, by rubric key (then by mode).
DEFAULT_BY_RUBRIC = {
    "llmeval1": "llmeval1-star",
    "llmeval2": "llmeval2-star",
    "alignbench": "alignbench",
    "pairwise": "llmeval1-pairwise",
}
DEFAULT_BY_MODE = {"star": "llmeval1-star", "pairwise": "llmeval1-pairwise"}

# Built-in star templates whose own words fix the scale and a criterion (AlignBench's prompt
# says "1～10" and asks for "综合得分", the overall score): key -> (lowest, highest, criterion
# key). The other built-in star templates take the criteria, their star meanings and ranges
# from the study's rubric ({criteria}, {scale}, {json_example}), so they fit any rubric.
FIXED_SCALE: dict[str, tuple[int, int, str]] = {"alignbench": (1, 10, "overall")}


def template_misfit(template, criteria: Sequence[Any]) -> str:
    """Why a built-in template cannot judge a rubric with these criteria ("" when it can): a
    prompt that asks for 1-10 scores and an overall score would make every answer to a 1-5
    rubric out of range, or find no score for it at all."""
    fixed = FIXED_SCALE.get(template.key) if template.builtin else None
    if fixed is None or template.kind != "star":
        return ""
    lo, hi, overall = fixed
    off = [c for c in criteria if (c.min_score, c.max_score) != (lo, hi)]
    if not off and any(c.key == overall for c in criteria):
        return ""
    have = ", ".join(f"{c.key} {c.min_score}-{c.max_score}" for c in criteria) or "—"
    said = gettext(
        "The built-in template %(key)s is written for AlignBench's rubric: every dimension "
        "scored %(lo)s to %(hi)s and an overall score (%(overall)s). This study's rubric has "
        "%(criteria)s. Give the judge a template that lists the rubric's own criteria and "
        "ranges (such as llmeval1-star), or leave its template blank."
    )
    return said % {"key": template.key, "lo": lo, "hi": hi, "overall": overall, "criteria": have}


def ensure_builtin_templates(model=None) -> int:
    """Create or refresh the shipped templates (a data migration and the tests call this).
    The model comes from the app registry, not an import: evaluation.models imports this
    module (for validation), so importing it back would make a cycle."""
    if model is None:
        model = django_apps.get_model("evaluation", "PromptTemplate")
    created = 0
    for spec in BUILTIN_TEMPLATES:
        _, was_created = model.objects.update_or_create(
            key=spec["key"],
            owner=None,  # keys are per owner: an organizer's template of this key stays theirs
            defaults={**{k: v for k, v in spec.items() if k != "key"}, "builtin": True},
        )
        created += was_created
    return created


# --- Rendering ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CriterionView:
    """What a prompt needs of a criterion (no ORM object, so planning can be cached)."""

    key: str
    label_en: str
    label_zh: str
    min_score: int
    max_score: int
    descriptions: tuple[str, ...]

    @classmethod
    def of(cls, c) -> CriterionView:
        return cls(
            key=c.key,
            label_en=c.label_en,
            label_zh=c.label_zh,
            min_score=c.min_score,
            max_score=c.max_score,
            descriptions=tuple((d or {}).get("en", "") for d in (c.descriptions or [])),
        )


def _criteria_block(criteria: Sequence[CriterionView]) -> str:
    parts = []
    for c in criteria:
        lines = [f"{c.label_en}:", ""]
        for i, star in enumerate(range(c.min_score, c.max_score + 1)):
            desc = c.descriptions[i] if i < len(c.descriptions) else ""
            unit = "star" if star == 1 else "stars"
            # A rubric of one's own may give no meaning: the line names the stars alone.
            lines.append(f"- {star} {unit} means {desc}" if desc else f"- {star} {unit}")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def _json_example(criteria: Sequence[CriterionView]) -> str:
    inner = ",\n".join(f'  "{c.label_en}": numbers of its stars(int)' for c in criteria)
    return "{\n" + inner + "\n}"


def _scale(criteria: Sequence[CriterionView]) -> str:
    """'1 to 3' when every criterion shares its range; otherwise each criterion's own range,
    grouped: '1 to 5 (Accuracy) and 1 to 3 (Informativeness, Fluency, Logicity)'. A single
    '1 to 5' header over three 1-3 criteria would invite out-of-range scores."""
    groups: dict[tuple[int, int], list[str]] = {}
    for c in criteria:
        groups.setdefault((c.min_score, c.max_score), []).append(c.label_en or c.key)
    if not groups:
        return "1 to 3"
    if len(groups) == 1:
        (lo, hi), _labels = next(iter(groups.items()))
        return f"{lo} to {hi}"
    return " and ".join(
        f"{lo} to {hi} ({', '.join(labels)})" for (lo, hi), labels in groups.items()
    )


def _dimensions(criteria: Sequence[CriterionView]) -> list[CriterionView]:
    return [c for c in criteria if c.key != "overall"]


def _dimension_block(criteria: Sequence[CriterionView]) -> str:
    lines = []
    for i, c in enumerate(_dimensions(criteria), start=1):
        definition = ALIGNBENCH_DIMENSIONS.get(c.label_zh, ("", "", c.label_en))[2]
        lines.append(f"{i}. {c.label_zh or c.label_en}: {definition}")
    return "".join(line + "\n" for line in lines)


def _dict_example(criteria: Sequence[CriterionView]) -> str:
    names = [c.label_zh or c.label_en for c in _dimensions(criteria)]
    return "{" + ", ".join(f"'{n}': 打分" for n in names + ["综合得分"]) + "}"


@functools.lru_cache(maxsize=256)
def _criteria_parts(criteria: tuple[CriterionView, ...]) -> dict[str, str]:
    """The parts of a prompt that depend on the criteria only, rendered once per set of criteria
    (a run renders them for every item; the caller copies the dict, never changes it)."""
    return {
        "criteria": _criteria_block(criteria),
        "json_example": _json_example(criteria),
        "dict_example": _dict_example(criteria),
        "dimensions": _dimension_block(criteria),
        "scale": _scale(criteria),
    }


def render_context(
    *,
    question,
    criteria: list[CriterionView],
    answer: str = "",
    answer_1: str = "",
    answer_2: str = "",
    hint_shown: bool,
    hint_format: str,
) -> dict[str, str]:
    hint = (question.reference or "") if hint_shown else ""
    return {
        "question": question.text,
        "answer": answer,
        "answer_1": answer_1,
        "answer_2": answer_2,
        "hint": hint,
        "hint_section": hint_format.format(hint=hint) if hint and hint_format else "",
        "reference": question.reference or "",
        **_criteria_parts(tuple(criteria)),
        "task": question.task_type or "question",
        "category": question.answer_type or question.task_type or "回答",
    }


def render_messages(template, context: dict[str, str], *, json_mode: bool) -> list[dict[str, str]]:
    user = template.user.format(**context)
    if json_mode and template.json_instructions:
        user += template.json_instructions.format(**context)
    messages = []
    if template.system:
        messages.append({"role": "system", "content": template.system.format(**context)})
    messages.append({"role": "user", "content": user})
    return messages


def uses_reference(template) -> bool:
    """Templates that always show the reference (AlignBench) expose it whatever the study's hint
    policy; the assignment then records hint_shown=True."""
    return "reference" in placeholders_in(template.user) | placeholders_in(template.system or "")
