"""A corpus of realistic star-judge outputs, generated from templates, for the parser's tests
and benchmarks/parse_corpus.py. Pure Python, no Django.

Each case carries what a careful reader would take from the text: the scores (`expected`), or
None when the text must stay unparsed (a score missing, out of range, on another scale, given
twice with different values, or never given). The expected scores are drawn at random first and
the text is written from them, so a test compares the parser with the generator, not with
numbers copied from the parser.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass

from evaluation.parsers import Spec


@dataclass(frozen=True)
class Case:
    family: str  # which writing habit produced it ('bold', 'json-fenced', 'missing', ...)
    specs: tuple[Spec, ...]
    text: str
    expected: dict[str, int] | None  # None: must stay unparsed


# The built-in rubrics as the judge runner hands them to the parser: (key, (en, zh), lo, hi).
RUBRICS: dict[str, tuple[Spec, ...]] = {
    "llmeval1": (
        Spec("accuracy", ("Accuracy", "正确性"), 1, 3),
        Spec("informativeness", ("Informativeness", "信息量"), 1, 3),
        Spec("fluency", ("Fluency", "流畅性"), 1, 3),
        Spec("logicality", ("Logicity", "逻辑性"), 1, 3),
        Spec("harmlessness", ("Harmlessness", "无害性"), 1, 3),
    ),
    "llmeval2-objective": (
        Spec("correctness", ("Correctness", "正确性"), 1, 3),
        Spec("explanation_correctness", ("Explanation Correctness", "解释正确性"), 1, 2),
    ),
    "llmeval2-subjective": (
        Spec("accuracy", ("Accuracy", "正确性"), 1, 5),
        Spec("informativeness", ("Informativeness", "信息量"), 1, 3),
        Spec("fluency", ("Fluency", "流畅性"), 1, 3),
        Spec("logicality", ("Logicity", "逻辑性"), 1, 3),
    ),
}
# Other names judges really write for a criterion (the appendix says "Logical Coherence").
OTHER_NAMES = {"logicality": ("Logical Coherence", "Logicality", "logicity")}

PREAMBLES = (
    "",
    "Stars:\n",
    "Here is my evaluation of the LLM output.\n\n",
    "根据评分标准，我的打分如下：\n",
    "The answer mentions the right dynasty but the explanation is thin.\n\nScores:\n",
)
CODAS = (
    "",
    "\n\nOverall the answer is acceptable.",
    "\n\n总体来说，回答基本正确。",
    "\n\nNote: 1 star means completely wrong and 3 stars means completely correct.",
)
FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def _label(rng: random.Random, spec: Spec) -> str:
    en, zh = spec.labels
    choices = [en, en, en.upper(), en.lower(), zh, f"{en} ({zh})", f"{zh}（{en}）"]
    choices += list(OTHER_NAMES.get(spec.key, ()))
    return rng.choice(choices)


def _value(rng: random.Random, v: int, spec: Spec) -> str:
    stars = "star" if v == 1 else "stars"
    return rng.choice(
        [
            str(v),
            f"{v} {stars}",
            f"{v}/{spec.hi}",
            f"{v} out of {spec.hi}",
            "★" * v,
            "★" * v + "☆" * (spec.hi - v),
            f"{v}分",
            f"{v}星",
            f"**{v}**",
            str(v).translate(FULLWIDTH),
            f"{v} {stars} - the answer is as described",
            f"{v} ({stars})",
        ]
    )


def _line(rng: random.Random, label: str, value: str, i: int) -> str:
    forms = [
        f"{label}: {value}",
        f"{label}：{value}",
        f"{label} - {value}",
        f"{label} = {value}",
        f"**{label}**: {value}",
        f"**{label}:** {value}",
        f"- **{label}**：{value}",
        f"* {label}: {value}",
        f"{i + 1}. {label}: {value}",
        f"{i + 1}、{label}：{value}",
        f"【{label}】：{value}",
        f"### {label}\n{value}",
        f"{label}\n{value}",
        f"{label}:\n{value}",
    ]
    if not value.startswith(("*", "★")):
        forms.append(f"{label} is {value}")
    return rng.choice(forms)


def _scores(rng: random.Random, specs: tuple[Spec, ...]) -> dict[str, int]:
    return {s.key: rng.randint(s.lo, s.hi) for s in specs}


def _lines_text(rng: random.Random, specs, scores) -> tuple[str, str]:
    order = list(specs)
    rng.shuffle(order)
    if rng.random() < 0.15:  # a Markdown table
        rows = [f"| {_label(rng, s)} | {_value(rng, scores[s.key], s)} |" for s in order]
        body = "| Criterion | Stars |\n|---|---|\n" + "\n".join(rows)
        return "table", body
    if rng.random() < 0.15:  # all on one line
        body = ", ".join(f"{_label(rng, s)}: {scores[s.key]}" for s in order)
        return "one-line", body
    sep = rng.choice(["\n", "\n", "\n\n"])
    body = sep.join(
        _line(rng, _label(rng, s), _value(rng, scores[s.key], s), i) for i, s in enumerate(order)
    )
    return "lines", body


def _json_text(rng: random.Random, specs, scores) -> tuple[str, str]:
    use_zh = rng.random() < 0.3
    obj: dict = {}
    for s in specs:
        name = s.labels[1] if use_zh else rng.choice([s.labels[0], s.key])
        v = scores[s.key]
        obj[name] = rng.choice([v, v, str(v), f"{v} stars", {"score": v, "reason": "ok"}])
    if rng.random() < 0.3:
        obj = {"scores": obj, "explanation": "Accuracy: 1 is what a wrong answer gets."}
    body = json.dumps(obj, ensure_ascii=False, indent=rng.choice([None, 2]))
    kind = rng.choice(["json-bare", "json-fenced", "json-after-reasoning"])
    if kind == "json-fenced":
        body = f"```json\n{body}\n```"
    elif kind == "json-after-reasoning":
        body = "Correctness: the answer is partly right.\n\nFinal answer:\n" + body
    return kind, body


def _cases(n: int, seed: int, make) -> Iterator[Case]:
    """n cases, each made by `make(rng, specs, scores)` for a random rubric and its scores."""
    rng = random.Random(seed)
    names = sorted(RUBRICS)
    for _ in range(n):
        specs = RUBRICS[rng.choice(names)]
        yield make(rng, specs, _scores(rng, specs))


def _good(rng: random.Random, specs, scores) -> Case:
    maker = _json_text if rng.random() < 0.3 else _lines_text
    family, body = maker(rng, specs, scores)
    text = rng.choice(PREAMBLES) + body + (rng.choice(CODAS) if "json" not in family else "")
    return Case(family, specs, text, scores)


def good_cases(n: int = 400, seed: int = 0) -> Iterator[Case]:
    """Outputs that give every criterion exactly one score, in range, in a form people read."""
    return _cases(n, seed, _good)


def _broken(rng: random.Random, specs, scores) -> tuple[str, dict[str, str]]:
    """One criterion's line replaced by something that must not give a number."""
    victim = rng.choice(specs)
    v, hi = scores[victim.key], victim.hi
    other = v % victim.hi + 1 if victim.hi > 1 else v
    problems = {
        "missing": "",
        "out-of-range": f"{victim.labels[0]}: {hi + rng.randint(1, 90)}",
        "zero": f"{victim.labels[0]}: 0",
        "other-scale": f"{victim.labels[0]}: {min(v, hi)}/{hi + 7}",
        "ambiguous": f"{victim.labels[0]}: {v}\n{victim.labels[0]}: {other}",
        "decimal": f"{victim.labels[0]}: {v}.5",
        "arabic-digit": f"{victim.labels[0]}: {'٠١٢٣٤٥'[v]}",
        "superscript": f"{victim.labels[0]}: {'⁰¹²³⁴⁵'[v]}",
        "huge": f"{victim.labels[0]}: {'9' * 400}",
        "rubric-echo": f"{victim.labels[0]}:\n\n- 1 star means wrong\n- {hi} stars means right",
        "prose": f"{victim.labels[0]}: 1 of the facts is wrong, so it is mediocre",
        "nul": f"{victim.labels[0]}:\x00",
    }
    family = rng.choice(sorted(problems))
    if family == "ambiguous" and other == v:
        family = "missing"
    lines = [problems[family] if s is victim else f"{s.labels[0]}: {scores[s.key]}" for s in specs]
    return family, {"text": "\n".join(line for line in lines if line)}


def _bad(rng: random.Random, specs, scores) -> Case:
    family, out = _broken(rng, specs, scores)
    return Case(family, specs, rng.choice(PREAMBLES) + out["text"], None)


def bad_cases(n: int = 200, seed: int = 1) -> Iterator[Case]:
    """Outputs a careful reader could not score: each must stay unparsed."""
    return _cases(n, seed, _bad)
