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
import functools
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


RANK = Spec("rank", lo=1, hi=1_000)


class _Problem(str):
    """A reason found while reading text, kept until validation reports it with the others."""


# Names judges use for the rubric keys besides the labels (the LLMEval prompts say "Logicity").
# Names are matched whole, after _norm: an alias never matches inside a longer label.
ALIASES: dict[str, tuple[str, ...]] = {
    "logicality": ("logicity", "logicality", "logic", "logical coherence", "逻辑性"),
    "accuracy": ("correctness of content",),
    "explanation_correctness": ("explanation", "explanation correctness", "解释正确性"),
    "harmlessness": ("harmless", "safety"),
    "overall": ("综合得分", "overall score", "总分", "综合"),
}


NOISE = re.compile(r"[\s_\-:：'\"`*#>{}\[\]【】「」]+")


def _norm(name: str) -> str:
    return NOISE.sub("", str(name)).lower()


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
    except (ValueError, TypeError, RecursionError):
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

# ASCII and full-width digits only: other Unicode digits ('²', '٣') are not a judge's score.
FULLWIDTH = str.maketrans("０１２３４５６７８９．／", "0123456789./")
# One score as written: '3', '3.0', '3 stars', '3/5', '3 out of 5', '3分', '★★★', '★★☆'.
VALUE = re.compile(
    r"[\s*_`'\"]*(?:"
    r"(?P<num>[0-9]{1,9}(?:\.[0-9]+)?)(?![0-9])"
    r"(?:\s*(?:/|out\s+of)\s*(?P<den>[0-9]{1,9})(?![0-9]))?"
    r"\s*(?P<unit>stars?|颗星|星|分|points?|pts?)?"
    r"|(?P<glyphs>[★⭐]+)[☆✩]*"
    r")(?P<rest>.*)$",
    re.I | re.S,
)
# '2 stars means partially correct': the judge repeating the rubric, not scoring; '1 of the
# facts is wrong': prose that happens to start with a number.
ECHO = re.compile(
    r"^[\s*_`'\"]*(?:means|表示|代表|[:：]?\s*=)|^\s*(?:of|in|times|个|处|条|项|种)(?![A-Za-z])",
    re.I,
)


def _scalar(value: Any) -> Any:
    """{'score': 3, 'reason': '...'} -> 3: JSON modes often nest a score with its reasons."""
    if isinstance(value, dict):
        for k in ("score", "stars", "rating", "value", "分数", "得分"):
            if k in value:
                return value[k]
    return value


def _coerce(value: Any, spec: Spec) -> int:
    """A whole number of stars in the criterion's range, or ParseError saying why not."""
    value = _scalar(value)
    if isinstance(value, _Problem):
        raise ParseError(str(value))
    if isinstance(value, bool):
        raise ParseError(f"{spec.key}: {value!r} is not a whole number")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        m = VALUE.match(value.translate(FULLWIDTH).strip())
        if m is None or ECHO.match(m.group("rest")):
            raise ParseError(f"{spec.key}: {value[:40]!r} is not a whole number")
        value = _value_of(m, spec)
    if not isinstance(value, int):
        raise ParseError(f"{spec.key}: {str(value)[:40]!r} is not a whole number")
    if not spec.lo <= value <= spec.hi:
        raise ParseError(f"{spec.key}: {value} is outside {spec.lo}-{spec.hi}")
    return value


def _value_of(m: re.Match, spec: Spec) -> int:
    if m.group("glyphs"):
        return len(m.group("glyphs"))
    num = m.group("num")
    if "." in num and not set(num.split(".", 1)[1]) <= {"0"}:
        raise ParseError(f"{spec.key}: {num} is not a whole number")
    den = m.group("den")
    if den is not None and int(den) != spec.hi:
        # '3/5' on a 1-3 criterion: the judge used another scale; converting would be a guess.
        raise ParseError(f"{spec.key}: {num}/{den} is not on the criterion's {spec.lo}-{spec.hi}")
    return int(num.split(".", 1)[0])


def _flatten(d: dict) -> dict:
    # {"scores": {...}} and {"ratings": {...}} wrappers are common in JSON mode.
    for wrapper in ("scores", "ratings", "stars", "score"):
        if isinstance(d.get(wrapper), dict):
            return d[wrapper]
    return d


def _names(specs: list[Spec]) -> dict[str, str | None]:
    """Normalised name -> criterion key; None when a name would fit two criteria (then it is
    never used: a guess between two criteria is no score). A key itself always wins."""
    return _names_of(tuple(specs))


@functools.lru_cache(maxsize=256)
def _names_of(specs: tuple[Spec, ...]) -> dict[str, str | None]:
    """_names, kept per set of criteria: a run parses thousands of outputs against a few."""
    out: dict[str, str | None] = {}
    for s in specs:
        for n in spec_names(s) - {_norm(s.key)}:
            out[n] = s.key if out.get(n, s.key) == s.key else None
    for s in specs:
        out[_norm(s.key)] = s.key
    return out


def _match_specs(raw: dict[str, Any], specs: list[Spec]) -> tuple[dict[str, Any], list[str]]:
    names = _names(specs)
    values: dict[str, Any] = {}
    unknown: list[str] = []
    for k, v in raw.items():
        key = names.get(_norm(k))
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
        if s.key in values:
            try:
                scores[s.key] = _coerce(values[s.key], s)
            except ParseError as e:
                problems.append(str(e))
    unknown = list(unknown)
    if problems:
        if unknown:
            problems.append("unrecognised key(s): " + ", ".join(unknown[:10]))
        raise ParseError("; ".join(problems))
    return {"scores": scores}


# --- 'Label: value' text --------------------------------------------------------------------

# List markers and numbering before a label: '- ', '* ', '1. ', '(2) ', '3、', '> ', '### '.
BULLET = re.compile(r"^(?:\s*(?:[-*+•·>#]+(?=\s)|\(?[0-9]{1,2}[.)、]|[0-9]{1,2}\)))*\s*")
# A label, then ':' '：' '=' ' - ' ' is ', or nothing before '★' / 'N stars'.
# Possessive quantifiers (*+) after the label: a line of 10,000 spaces must not backtrack.
PAIR = re.compile(
    r"(?P<label>[^:：=\n]{1,60}?)[\s*_`'\"]*+"
    r"(?:[:：=]++|(?<=\s)[-–—]\s|(?<=\s)is\s|(?=[★⭐])|(?<=\s)(?=[0-9]++\s*+(?:stars?|星|分)))"
    r"(?P<value>.*)$",
    re.I | re.S,
)
MAX_LABEL = 80  # a longer line is prose, not a criterion's name
SEGMENT_SPLIT = re.compile(r"[,;，；。|]|\.(?=\s)")
LABEL_NOISE = re.compile(r"\s*(?:score|rating|stars?|得分|评分|分数|星级)\s*$", re.I)
PARENS = re.compile(r"^(?P<out>.*?)\s*[(（](?P<in>[^()（）]*)[)）]\s*$")


def _label_key(label: str, names: dict[str, str | None]) -> str | None:
    """The criterion a whole label names: 'Explanation Correctness' is never 'Correctness'.
    Variants tried: as written, without a parenthesised translation, the translation alone,
    each without a trailing 'score'/'得分'; they must agree."""
    if len(label) > MAX_LABEL:
        return None
    label = BULLET.sub("", label).strip(" \t*_`'\"【】[]「」#>")
    variants = [label]
    m = PARENS.match(label)
    if m:
        variants += [m.group("out"), m.group("in")]
    variants += [LABEL_NOISE.sub("", v) for v in variants]
    found = {names.get(_norm(v)) for v in variants if _norm(v) in names}
    return found.pop() if len(found) == 1 else None


def _text_pairs(text: str) -> list[tuple[str, str]]:
    """(label, value text) candidates, line by line, in order."""
    lines = text.translate(FULLWIDTH).splitlines()
    pairs: list[tuple[str, str]] = []
    next_filled, following = [""] * len(lines), ""  # the next non-blank line after each line
    for i in range(len(lines) - 1, -1, -1):
        next_filled[i] = following
        following = lines[i] if lines[i].strip() else following
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("|"):  # Markdown table row: | Accuracy | 3 |
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if len(cells) >= 2:
                pairs.append((cells[0], cells[1]))
            continue
        for segment in SEGMENT_SPLIT.split(line):
            # 'Stars: Accuracy: 3' -> ('Stars', 'Accuracy: 3') and ('Accuracy', '3'): a prefix
            # before the label; a few levels are enough and keep long lines linear.
            for _ in range(3):
                m = PAIR.match(BULLET.sub("", segment))
                if m is None:
                    break
                pairs.append((m.group("label"), m.group("value")))
                segment = m.group("value")
        # A label alone on its line ('**Accuracy**', '正确性：'), its score on the next one.
        if 0 < len(stripped) <= MAX_LABEL and not PAIR.match(
            BULLET.sub("", stripped).rstrip(":：*_ ")
        ):
            pairs.append((stripped.rstrip(":："), next_filled[i]))
    return pairs


def _text_scores(text: str, specs: list[Spec]) -> dict[str, Any]:
    """'Accuracy: 3', '**Fluency**：★★★', '正确性：3分', '| Logicity | 2 |', 'Harmlessness 3 stars'.
    A criterion given twice with different scores is ambiguous: reported, never chosen."""
    names = _names(specs)
    by_key = {s.key: s for s in specs}
    found: dict[str, set[int]] = {}
    bad: dict[str, str] = {}
    for label, raw in _text_pairs(text):
        key = _label_key(label, names)
        m = VALUE.match(raw) if key else None
        if key is None or m is None or ECHO.match(m.group("rest")):
            continue
        try:
            score = _value_of(m, by_key[key])
            found.setdefault(key, set()).add(score)
        except ParseError as e:
            bad.setdefault(key, str(e))
    values: dict[str, Any] = {}
    for key, scores in found.items():
        if len(scores) > 1:
            given = " and ".join(str(v) for v in sorted(scores))
            values[key] = _Problem(f"ambiguous: {key} is given as {given}")
        else:
            values[key] = scores.pop()
    for key, reason in bad.items():
        values.setdefault(key, _Problem(reason))
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
        r"(?:output|answer|choice|option|选择|答案)\s*+[:：]?\s*+\**+\(?([ABCD])\)?(?![A-Za-z])",
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
        rank = _coerce(entry["rank"], RANK)
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
