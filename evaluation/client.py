"""The HTTP side of a judge call: the openai client, its transport, reading answers, errors and
waiting times (Retry-After, backoff) from the server's responses."""

from __future__ import annotations

import email.utils
import os
import random
from datetime import UTC, datetime

import httpx2
import openai

from evaluation import safety

BACKOFF_CAP = 60.0
RETRY_AFTER_CAP = 600.0


def retry_after_seconds(headers) -> float | None:
    """Retry-After as seconds (number or HTTP date), or OpenAI's retry-after-ms; None if absent."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def backoff_delay(attempt: int, base: float, rng: random.Random) -> float:
    """Full jitter: uniform between half and all of base x 2^(attempt-1), capped."""
    ceiling = min(BACKOFF_CAP, base * 2 ** (attempt - 1))
    return ceiling * (0.5 + rng.random() / 2)


def from_typed(resp) -> tuple[str, str, int, int]:
    choice = resp.choices[0] if resp.choices else None
    usage = resp.usage
    return (
        (choice.message.content or "") if choice else "",
        (choice.finish_reason or "") if choice else "",
        (usage.prompt_tokens or 0) if usage else 0,
        (usage.completion_tokens or 0) if usage else 0,
    )


def from_json(raw) -> tuple[str, str, int, int]:
    """content, finish_reason, prompt and completion tokens of a chat completion body."""
    data = raw.json()
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise ValueError("no choices in the response body")
    choice = data["choices"][0] if data["choices"] else {}
    message = choice.get("message") or {}
    usage = data.get("usage") or {}
    return (
        message.get("content") or "",
        choice.get("finish_reason") or "",
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
    )


def http_client():
    """The openai SDK's aiohttp transport when aiohttp is installed (its C HTTP parser halves
    the client's CPU per call, which is what bounds throughput at high concurrency), with a
    resolver that refuses addresses judges may not call (safety.guarded_session); else the SDK's
    default httpx transport. JUDGE_HTTP_TRANSPORT=httpx forces the latter. Neither follows
    redirects: a judge URL must not bounce the key or the requests to another host."""
    if os.environ.get("JUDGE_HTTP_TRANSPORT", "") == "httpx":
        return openai.DefaultAsyncHttpxClient(follow_redirects=False)
    try:
        from openai._vendor.httpx_aiohttp import AiohttpTransport
    except ImportError:
        return openai.DefaultAsyncHttpxClient(follow_redirects=False)
    return openai.DefaultAioHttpClient(
        follow_redirects=False, transport=AiohttpTransport(client=safety.guarded_session)
    )


def error_message(e: openai.APIStatusError) -> str:
    """The server's own message, cut short (the caller blanks the key: see safety)."""
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return safety.short_error(inner["message"])
    return safety.short_error(e.message if e.message else e.__class__.__name__)


async def post_chat(client: openai.AsyncOpenAI, body: dict, headers: dict, *, typed: bool):
    """(content, finish_reason, tokens in, tokens out) and the response headers of one chat
    completion. Raises the SDK's errors (APIStatusError, APITimeoutError, ...)."""
    if typed:
        raw = await client.chat.completions.with_raw_response.create(**body, extra_headers=headers)
        return from_typed(raw.parse()), raw.headers
    # The same client, path, auth, timeout and error mapping (APIStatusError etc.) without the
    # SDK's per-call request transform and response model building, which cost more CPU than
    # everything else here (see docs/decisions/judges.md).
    response = await client.post(
        "/chat/completions", body=body, cast_to=httpx2.Response, options={"headers": headers}
    )
    return from_json(response), response.headers
