"""What the fake OpenAI server answers (evaluation/testing/fake_openai.py, fake_batch.py): a
deterministic function of the prompt, so tests can predict it, or a broken answer when a marker
asks for one."""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any

MARKER = re.compile(r"<<fake:([a-z0-9-]+)(?::([0-9.]+))?>>")


def _prompt_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def _pick(digest: bytes, i: int, lo: int, hi: int) -> int:
    return lo + digest[i % len(digest)] % (hi - lo + 1)


# "- 2 stars means partly right", or "- 2 stars" alone where a rubric of one's own gives no meaning.
STAR_LINE = re.compile(r"^- (\d+) stars?(?: means|$)", re.M)


def star_criteria(prompt: str) -> list[tuple[str, int, int]]:
    """(label, lo, hi) for each criterion block 'Label:' followed by '- N star(s) [means ...]'
    lines."""
    out = []
    lines = prompt.splitlines()
    for i, line in enumerate(lines):
        if not line.endswith(":") or line.startswith("-"):
            continue
        stars: list[int] = []
        for nxt in lines[i + 1 : i + 15]:
            if not nxt.strip():
                if stars:
                    break
                continue
            m = STAR_LINE.match(nxt)
            if not m:
                break
            stars.append(int(m.group(1)))
        if stars:
            out.append((line[:-1].strip(), min(stars), max(stars)))
    return out


def alignbench_dimensions(prompt: str) -> list[str]:
    dims = re.findall(r"^\d+\. ([^:：\n]+)[:：]", prompt, re.M)
    # The numbered procedure steps in the prompt are sentences, not dimension names.
    return [d.strip() for d in dims if len(d.strip()) <= 12 and "AI" not in d]


def answer_for(messages: list[dict[str, Any]], *, json_mode: bool = False) -> str:
    """The answer the server gives to a clean request, derived from the prompt alone."""
    prompt = _prompt_text(messages)
    d = _digest(MARKER.sub("", prompt))
    if "model_1" in prompt and "rank" in prompt:
        first = 1 + d[0] % 2
        ranking = [{"model": "model_1", "rank": first}, {"model": "model_2", "rank": 3 - first}]
        if json_mode:
            return json.dumps({"ranking": ranking})
        return repr(ranking)
    if "D: Both are bad" in prompt or "Please choose" in prompt:
        letter = "ABCD"[d[0] % 4]
        return json.dumps({"choice": letter}) if json_mode else f"{letter}"
    if "综合得分" in prompt:
        dims = alignbench_dimensions(prompt)
        scores = {name: _pick(d, i, 1, 10) for i, name in enumerate(dims)}
        scores["综合得分"] = _pick(d, len(dims), 1, 10)
        if json_mode:
            return json.dumps(
                {"explanation": "与参考答案相比，回答基本正确。", "scores": scores},
                ensure_ascii=False,
            )
        body = "".join(f"{name}：分析……得分 {v}\n" for name, v in scores.items())
        return f"与参考答案相比，回答有一些不足。\n{body}最终评分：{scores!r}"
    crits = star_criteria(prompt)
    scores = {label: _pick(d, i, lo, hi) for i, (label, lo, hi) in enumerate(crits)}
    if json_mode or "```" in prompt:
        return json.dumps(scores)
    return "\n".join(f"{label}: {v} stars" for label, v in scores.items())


BAD_KINDS = ("malformed", "wrongkeys", "outofrange", "truncated", "nested", "nul", "surrogate")


def bad_answer(kind: str, messages: list[dict[str, Any]], json_mode: bool) -> tuple[str, str]:
    good = answer_for(messages, json_mode=json_mode)
    if kind == "malformed":
        return "I am not able to rate this answer.", "stop"
    if kind == "wrongkeys":
        return json.dumps({"quality": 2, "verdict": "fine"}), "stop"
    if kind == "outofrange":
        return re.sub(r"(?<=[:：] )\d+|(?<=\": )\d+|(?<=rank': )\d+", "99", good), "stop"
    if kind == "truncated":
        return good[: max(1, len(good) // 3)], "length"
    if kind == "nested":  # JSON nested deeper than any parser's stack
        return '{"a": ' * 20000 + "1" + "}" * 20000, "stop"
    if kind == "nul":  # a NUL character, which PostgreSQL text cannot hold
        return good + "\x00", "stop"
    if kind == "surrogate":  # half of a UTF-16 pair, which no database text can hold
        return good + "\ud800", "stop"
    return good, "stop"


def completion(req: dict[str, Any], messages: list, markers, completion_id: str):
    """(body, prompt tokens, completion tokens) of a 200 chat completion, clean or as the markers
    ask. Usage counts prompt characters / 4 (as a tokenizer counts English) and the answer at
    most max_tokens, as a real server bills."""
    json_mode = (req.get("response_format") or {}).get("type") == "json_object"
    kind = next((k for k in BAD_KINDS if k in markers), "")
    content, finish = bad_answer(kind, messages, json_mode)
    tokens_in = max(1, (len(_prompt_text(messages)) + 3) // 4)
    tokens_out = max(1, min(len(content) // 2, int(req.get("max_tokens") or 1 << 30)))
    data = {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": req.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        },
    }
    return data, tokens_in, tokens_out
