"""Parse judge outputs into rubric scores or a pairwise choice. Pure Python, no Django.

Every parser returns a dict (stored as JudgeCall.parsed) or raises ParseError with a reason a
person can read. Nothing is guessed: a missing, extra-ambiguous or out-of-range score is a
failure, never a number.

Star results: {"scores": {criterion_key: int}}.
Pairwise results: {"shown": "left" | "right" | "tie" | "both_bad"} (relative to what the judge
saw); `canonical_choice` turns that into the stored A/B orientation.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


class ParseError(ValueError):
    pass


@dataclass(frozen=True)
class Spec:
    """A criterion as a parser sees it: its key, the names a judge may use for it, its range."""

    key: str
    labels: tuple[str, ...] = field(default_factory=tuple)
    lo: int = 1
    hi: int = 3


# Names judges use for the rubric keys besides the labels (the LLMEval prompts say "Logicity").
ALIASES: dict[str, tuple[str, ...]] = {
    "logicality": ("logicity", "logic", "logical coherence", "逻辑性"),
    "accuracy": ("correctness of content",),
    "explanation_correctness": ("explanation", "explanation correctness"),
    "harmlessness": ("harmless", "safety"),
    "overall": ("综合得分", "overall score", "总分", "综合"),
}


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-:：'\"`*]+", "", str(name)).lower()


def spec_names(spec: Spec) -> set[str]:
    return {_norm(n) for n in (spec.key, *spec.labels, *ALIASES.get(spec.key, ())) if n}


# --- Structured pieces ----------------------------------------------------------------------

FENCE = re.compile(r"```(?:json|python|py)?\s*(.*?)```", re.S | re.I)


def _balanced(text: str, open_ch: str, close_ch: str) -> list[str]:
    """Top-level balanced {...} or [...] substrings, in order."""
    out, depth, start = [], 0, None
    in_str: str | None = None
    esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == in_str:
                in_str = None
            continue
        if ch in "\"'" and depth > 0:
            in_str = ch
        elif ch == open_ch:
            if depth == 0:
                start = i
            depth += 1
        elif ch == close_ch and depth > 0:
            depth -= 1
            if depth == 0 and start is not None:
                out.append(text[start : i + 1])
                start = None
    return out


def _load(fragment: str) -> Any:
    try:
        return json.loads(fragment)
    except (ValueError, TypeError):
        pass
    try:
        return ast.literal_eval(fragment)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def structured(text: str, kind: type) -> list[Any]:
    """Every dict (or list) found in the output: fenced blocks first, then bare ones, last wins
    ties. Python literals (single quotes) are accepted, as the AlignBench and ChineseAlpacaEval
    prompts ask for them."""
    found: list[Any] = []
    open_ch, close_ch = ("{", "}") if kind is dict else ("[", "]")
    candidates = [m.group(1) for m in FENCE.finditer(text)]
    candidates += _balanced(text, open_ch, close_ch)
    for cand in candidates:
        cand = cand.strip()
        value = _load(cand)
        if value is None and not cand.startswith(open_ch):
            for inner in _balanced(cand, open_ch, close_ch):
                value = _load(inner)
                if isinstance(value, kind):
                    found.append(value)
            continue
        if isinstance(value, kind):
            found.append(value)
    return found


# --- Stars ----------------------------------------------------------------------------------

STAR_CHARS = re.compile(r"^[★⭐]+$")


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        v = value.strip()
        if STAR_CHARS.match(v):
            return len(v)
        m = re.match(r"^(\d+)(?:\.0+)?\s*(?:stars?|星|分|points?)?$", v, re.I)
        if m:
            return int(m.group(1))
    return None


def _flatten(d: dict) -> dict:
    # {"scores": {...}} and {"ratings": {...}} wrappers are common in JSON mode.
    for wrapper in ("scores", "ratings", "stars", "score"):
        if isinstance(d.get(wrapper), dict):
            return d[wrapper]
    return d


def _match_specs(raw: dict[str, Any], specs: list[Spec]) -> tuple[dict[str, Any], list[str]]:
    by_name = {}
    for s in specs:
        for n in spec_names(s):
            by_name.setdefault(n, s.key)
    values: dict[str, Any] = {}
    unknown: list[str] = []
    for k, v in raw.items():
        key = by_name.get(_norm(k))
        if key is None:
            unknown.append(str(k))
        else:
            values[key] = v
    return values, unknown


def _validate(values: dict[str, Any], specs: list[Spec], unknown: Iterable[str] = ()) -> dict:
    problems = []
    scores: dict[str, int] = {}
    missing = [s.key for s in specs if s.key not in values]
    if missing:
        problems.append("missing score(s) for " + ", ".join(missing))
    for s in specs:
        if s.key not in values:
            continue
        v = _as_int(values[s.key])
        if v is None:
            problems.append(f"{s.key}: {values[s.key]!r} is not a whole number")
        elif not s.lo <= v <= s.hi:
            problems.append(f"{s.key}: {v} is outside {s.lo}-{s.hi}")
        else:
            scores[s.key] = v
    unknown = list(unknown)
    if problems:
        if unknown:
            problems.append("unrecognised key(s): " + ", ".join(unknown))
        raise ParseError("; ".join(problems))
    return {"scores": scores}


def _text_scores(text: str, specs: list[Spec]) -> dict[str, Any]:
    """'Accuracy: 3', 'Accuracy - 2 stars', '**Fluency**: ★★★' lines."""
    values: dict[str, Any] = {}
    for s in specs:
        for name in sorted(
            {n for n in (s.key, *s.labels, *ALIASES.get(s.key, ())) if n}, key=len, reverse=True
        ):
            pattern = re.compile(
                r"(?<![A-Za-z])"
                + re.escape(name).replace(r"\ ", r"[\s_]*")
                + r"[\s*'\"`]*(?:[:：=\-]|is)\s*\**\s*([0-9]+(?:\.[0-9]+)?|[★⭐]+)",
                re.I,
            )
            hits = pattern.findall(text)
            if hits:
                distinct = set(hits)
                values[s.key] = hits[-1] if len(distinct) == 1 else f"ambiguous {sorted(distinct)}"
                break
    return values


def parse_stars(text: str, specs: list[Spec]) -> dict:
    if not text or not text.strip():
        raise ParseError("empty output")
    if not specs:
        raise ParseError("no criteria apply to this question")
    dicts = structured(text, dict)
    best_error: ParseError | None = None
    for d in reversed(dicts):
        values, unknown = _match_specs(_flatten(d), specs)
        if values:
            try:
                return _validate(values, specs, unknown)
            except ParseError as e:
                best_error = e
    if best_error is not None:
        raise best_error
    values = _text_scores(text, specs)
    if not values and len(specs) == 1:
        m = re.search(r"(?:stars?|score|rating)\s*[:：]\s*([0-9]+)", text, re.I)
        if m:
            values = {specs[0].key: m.group(1)}
    if not values:
        raise ParseError("no scores found (expected a JSON object or 'Criterion: N' lines)")
    return _validate(values, specs)


def parse_alignbench(text: str, specs: list[Spec]) -> dict:
    """AlignBench: reasoning, then a dict {'维度': n, ..., '综合得分': n}; the last dict wins.
    A bare "[[8]]" is accepted only when the overall score is the sole criterion."""
    if not text or not text.strip():
        raise ParseError("empty output")
    dicts = structured(text, dict)
    for d in reversed(dicts):
        values, unknown = _match_specs(_flatten(d), specs)
        if values:
            return _validate(values, specs, unknown)
    m = re.findall(r"\[\[(\d+(?:\.\d+)?)\]\]", text)
    if m and [s.key for s in specs] == ["overall"]:
        return _validate({"overall": m[-1]}, specs)
    values = _text_scores(text, specs)
    if values:
        return _validate(values, specs)
    raise ParseError("no score dict found (expected {'维度': 分数, ..., '综合得分': 分数})")


# --- Pairwise -------------------------------------------------------------------------------

OPTION_TO_SHOWN = {"A": "left", "B": "right", "C": "tie", "D": "both_bad"}
WORD_TO_SHOWN = {"tie": "tie", "both bad": "both_bad", "both_bad": "both_bad"}


def parse_choice(text: str) -> dict:
    """LLMEval / MT-Bench options: A (first better), B (second better), C (tie), D (both bad)."""
    if not text or not text.strip():
        raise ParseError("empty output")
    for d in reversed(structured(text, dict)):
        for k in ("choice", "option", "answer", "output"):
            if k in d:
                v = str(d[k]).strip().upper()[:1]
                if v in OPTION_TO_SHOWN:
                    return {"shown": OPTION_TO_SHOWN[v], "option": v}
                raise ParseError(f"option {d[k]!r} is not one of A, B, C, D")
    stripped = text.strip()
    patterns = [
        r"\[\[([ABCD])\]\]",
        r"(?:output|answer|choice|option|选择|答案)\s*[:：]?\s*\**\(?([ABCD])\)?(?![A-Za-z])",
        r"^\**\(?([ABCD])\)?\**(?:[.:：)]|\s*$)",
    ]
    for p in patterns:
        hits = {h.upper() for h in re.findall(p, stripped, re.I | re.M)}
        if len(hits) == 1:
            v = hits.pop()
            return {"shown": OPTION_TO_SHOWN[v], "option": v}
        if len(hits) > 1:
            raise ParseError(f"ambiguous: several options given ({', '.join(sorted(hits))})")
    tokens = set(re.findall(r"(?<![A-Za-z'])([ABCD])(?![A-Za-z'])", stripped))
    if len(tokens) == 1:
        v = tokens.pop()
        return {"shown": OPTION_TO_SHOWN[v], "option": v}
    if len(tokens) > 1:
        raise ParseError(f"ambiguous: several options mentioned ({', '.join(sorted(tokens))})")
    raise ParseError("no option A, B, C or D found")


def parse_ranking(text: str) -> dict:
    """ChineseAlpacaEval: [{'model': 'model_1', 'rank': 1}, {'model': 'model_2', 'rank': 2}]."""
    if not text or not text.strip():
        raise ParseError("empty output")
    lists = structured(text, list)
    for d in structured(text, dict):
        if isinstance(d.get("ranking"), list):
            lists.append(d["ranking"])
    if not lists:
        raise ParseError("no ranking list found")
    ranking = lists[-1]
    ranks: dict[str, int] = {}
    for entry in ranking:
        if not isinstance(entry, dict) or "model" not in entry or "rank" not in entry:
            raise ParseError(f"ranking entry {entry!r} lacks 'model' and 'rank'")
        rank = _as_int(entry["rank"])
        if rank is None:
            raise ParseError(f"rank {entry['rank']!r} is not a whole number")
        ranks[str(entry["model"]).strip()] = rank
    if set(ranks) != {"model_1", "model_2"}:
        raise ParseError(f"expected ranks for model_1 and model_2, got {sorted(ranks)}")
    if ranks["model_1"] < ranks["model_2"]:
        return {"shown": "left"}
    if ranks["model_2"] < ranks["model_1"]:
        return {"shown": "right"}
    return {"shown": "tie"}


def canonical_choice(shown: str, *, left_is_a: bool) -> str:
    """Shown choice -> stored orientation (A is the item's response_a)."""
    if shown == "left":
        return "A" if left_is_a else "B"
    if shown == "right":
        return "B" if left_is_a else "A"
    if shown in ("tie", "both_bad"):
        return shown
    raise ParseError(f"unknown choice {shown!r}")


def parse(
    parser: str, text: str, specs: list[Spec] | None = None, *, left_is_a: bool = True
) -> dict:
    if parser == "stars":
        return parse_stars(text, specs or [])
    if parser == "alignbench":
        return parse_alignbench(text, specs or [])
    if parser in ("choice", "ranking"):
        result = parse_choice(text) if parser == "choice" else parse_ranking(text)
        result["choice"] = canonical_choice(result["shown"], left_is_a=left_is_a)
        return result
    raise ParseError(f"unknown parser {parser!r}")
