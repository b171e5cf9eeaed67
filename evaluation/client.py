"""The HTTP side of a judge call: the openai client, its transport, reading answers, errors and
waiting times (Retry-After, backoff) from the server's responses."""

from __future__ import annotations

import contextlib
import email.utils
import functools
import json
import os
import random
import ssl
from datetime import UTC, datetime
from typing import Any

import httpx2
import openai

from evaluation import safety

BACKOFF_CAP = 60.0
RETRY_AFTER_CAP = 600.0
# Connection pools never below these, whatever the concurrency (the SDK's own defaults).
POOL_MIN = 1000
KEEPALIVE_MIN = 100


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
        safety.storable_text(choice.message.content or "") if choice else "",
        _finish_reason(choice.finish_reason) if choice else "",
        _tokens(usage.prompt_tokens) if usage else 0,
        _tokens(usage.completion_tokens) if usage else 0,
    )


def from_json(raw) -> tuple[str, str, int, int]:
    """content, finish_reason, prompt and completion tokens of a chat completion response."""
    return completion_fields(loads(raw.content))


def loads(content: bytes | str) -> Any:
    """A response body's JSON; ValueError also when it is nested deeper than Python's stack."""
    try:
        return json.loads(content)
    except RecursionError:
        raise ValueError("the response body is nested too deeply") from None


# The longest token count a call may report (what a call's counters hold).
MAX_TOKENS = 2**31 - 1


def _tokens(value: Any) -> int:
    if value is None:
        return 0
    if type(value) is not int or not 0 <= value <= MAX_TOKENS:
        raise ValueError(f"a token count that is no count: {str(value)[:40]!r}")
    return value


def _finish_reason(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > 40:
        raise ValueError(f"a finish_reason that is no reason: {str(value)[:40]!r}")
    return safety.storable_text(value)


def completion_fields(data: Any) -> tuple[str, str, int, int]:
    """content, finish_reason, prompt and completion tokens of a chat completion body;
    ValueError when the body does not have a chat completion's shape (a server that sends
    something else, or a hostile one, fails the call instead of the run)."""
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise ValueError("no choices in the response body")
    choice = data["choices"][0] if data["choices"] else {}
    message = (choice.get("message") if isinstance(choice, dict) else None) or {}
    usage = data.get("usage") or {}
    if not all(isinstance(part, dict) for part in (choice, message, usage)):
        raise ValueError("the choice or the usage in the response body is not an object")
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise ValueError("the answer in the response body is not text")
    return (
        safety.storable_text(content),
        _finish_reason(choice.get("finish_reason")),
        _tokens(usage.get("prompt_tokens")),
        _tokens(usage.get("completion_tokens")),
    )


# The SDK's telemetry headers: nothing a judge server needs, and half the headers each call
# builds, copies and merges three times over (about a tenth of the event loop's CPU per call).
TELEMETRY_HEADERS = (
    "X-Stainless-Lang",
    "X-Stainless-Package-Version",
    "X-Stainless-OS",
    "X-Stainless-Arch",
    "X-Stainless-Runtime",
    "X-Stainless-Runtime-Version",
    "X-Stainless-Async",
)
# Omit() removes a header the SDK would add (typed str there, hence Any).
NO_TELEMETRY: dict[str, Any] = {h: openai.Omit() for h in TELEMETRY_HEADERS}
PER_CALL_OMITTED = {
    "X-Stainless-Retry-Count": openai.Omit(),
    "X-Stainless-Read-Timeout": openai.Omit(),
}


@functools.cache
def _unused_tls_context() -> ssl.SSLContext:
    """The aiohttp transport's own TLS context, which our session never uses (its connector has
    aiohttp's verified default context, made once when aiohttp is imported). It verifies
    certificates and host names but trusts no authority, so it would refuse rather than trust;
    and it loads no CA store, which cost 40-60 ms of CPU at the start of each run."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class JudgeClient(openai.AsyncOpenAI):
    """The SDK's client with the joined URL of each path kept (the same few paths are asked
    thousands of times per run; the base URL of a run does not change)."""

    def _prepare_url(self, url: str) -> httpx2.URL:
        cache = self.__dict__.setdefault("_judge_urls", {})
        prepared = cache.get(url)
        if prepared is None:
            prepared = cache[url] = super()._prepare_url(url)
        return prepared

    def direct_settings(self) -> tuple[str, dict[str, str], Any]:
        """The chat completions URL, the headers every call sends (the SDK's, minus those
        omitted) and the aiohttp timeout (the SDK's: connect, pool and each read), made once."""
        cached = self.__dict__.get("_judge_direct")
        if cached is None:
            import aiohttp

            headers = {
                **self.default_headers,
                "Authorization": f"Bearer {self.api_key}",
                **PER_CALL_OMITTED,
            }
            seconds = self.timeout if isinstance(self.timeout, float | int) else None
            cached = self.__dict__["_judge_direct"] = (
                str(self._prepare_url("/chat/completions")),
                {k: str(v) for k, v in headers.items() if not isinstance(v, openai.Omit)},
                aiohttp.ClientTimeout(
                    total=None, sock_connect=seconds, sock_read=seconds, connect=seconds
                ),
            )
        return cached


def make_client(base_url: str, api_key: str, *, timeout: float, concurrency: int) -> JudgeClient:
    """The run's client: the SDK's retries off (the executor retries), a connection pool that
    keeps a connection alive for each of the `concurrency` calls in flight."""
    return JudgeClient(
        base_url=base_url,
        api_key=api_key,
        max_retries=0,
        timeout=timeout,
        http_client=http_client(concurrency),
        default_headers=NO_TELEMETRY,
    )


def http_client(concurrency: int = 1):
    """The openai SDK's aiohttp transport when aiohttp is installed (its C HTTP parser halves
    the client's CPU per call, which is what bounds throughput at high concurrency), with a
    resolver that refuses addresses judges may not call (safety.guarded_session); else the SDK's
    default httpx transport. JUDGE_HTTP_TRANSPORT=httpx forces the latter. Neither follows
    redirects: a judge URL must not bounce the key or the requests to another host. Both pools
    hold at least `concurrency` connections, kept alive between calls."""
    limits = httpx2.Limits(
        max_connections=max(POOL_MIN, concurrency),
        max_keepalive_connections=max(KEEPALIVE_MIN, concurrency),
    )
    httpx_client = functools.partial(
        openai.DefaultAsyncHttpxClient, follow_redirects=False, limits=limits
    )
    if os.environ.get("JUDGE_HTTP_TRANSPORT", "") == "httpx":
        return httpx_client()
    try:
        from openai._vendor.httpx_aiohttp import AiohttpTransport
    except ImportError:
        return httpx_client()
    # The session is the guarded one; the transport's own TLS context goes unused.
    transport = AiohttpTransport(
        client=functools.partial(_sized_session, concurrency), verify=_unused_tls_context()
    )
    return openai.DefaultAioHttpClient(follow_redirects=False, transport=transport)


def _sized_session(concurrency: int):
    session = safety.guarded_session()
    if 0 < session.connector.limit < concurrency:
        raise ValueError(f"connection pool of {session.connector.limit} < {concurrency} calls")
    return session


def aiohttp_session(client: openai.AsyncOpenAI):
    """The aiohttp session under the client's transport (made on first use, inside the running
    event loop), or None with the httpx transport."""
    transport: Any = client._client._transport
    session = getattr(transport, "client", None)
    if callable(session):
        session = transport.client = session()
    return session


def pool_limits(client: openai.AsyncOpenAI) -> tuple[int, int]:
    """(connections, kept-alive connections) the client's pool holds; 0 means no limit. Inside
    a running event loop (the aiohttp session is made there)."""
    session = aiohttp_session(client)
    if session is not None:
        limit = session.connector.limit
        return limit, limit  # aiohttp keeps every connection of its pool alive
    transport: Any = client._client._transport
    pool = transport._pool
    return pool._max_connections, pool._max_keepalive_connections


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
    session = aiohttp_session(client)
    if session is not None and isinstance(client, JudgeClient):
        return await _post_direct(client, session, body, headers)
    # The same client, path, auth, timeout and error mapping (APIStatusError etc.) without the
    # SDK's per-call request transform and response model building, which cost more CPU than
    # everything else here (see docs/decisions/judges.md).
    response = await client.post(
        "/chat/completions",
        body=body,
        cast_to=httpx2.Response,
        options={"headers": {**headers, **PER_CALL_OMITTED}},
    )
    return from_json(response), response.headers


async def _post_direct(client: JudgeClient, session, body: dict, headers: dict):
    """post_chat straight on the client's aiohttp session (its pool and guarded resolver), with
    the SDK's headers, timeout and error types: building the SDK's and httpx's request and
    response objects costs twice the CPU of the HTTP exchange itself (see
    docs/decisions/judges.md). Errors build those objects, as the executor reads them."""
    import aiohttp

    url, fixed, timeout = client.direct_settings()
    try:
        async with session.post(
            url,
            data=json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(),
            headers={**fixed, **headers},
            allow_redirects=False,  # never bounce the key or the request to another host
            timeout=timeout,
        ) as response:
            content = await response.read()
    except TimeoutError as e:  # aiohttp's timeouts are TimeoutErrors too
        raise openai.APITimeoutError(request=httpx2.Request("POST", url)) from e
    except (aiohttp.ClientError, OSError) as e:
        raise openai.APIConnectionError(request=httpx2.Request("POST", url)) from e
    if not 200 <= response.status < 300:
        raise status_error(
            httpx2.Response(
                response.status,
                headers=response.raw_headers,
                content=content,
                request=httpx2.Request("POST", url),
            )
        )
    return completion_fields(loads(content)), response.headers


# The SDK's error class per status (as its clients choose them); others are APIStatusError,
# 5xx InternalServerError.
STATUS_ERRORS: dict[int, type[openai.APIStatusError]] = {
    400: openai.BadRequestError,
    401: openai.AuthenticationError,
    403: openai.PermissionDeniedError,
    404: openai.NotFoundError,
    409: openai.ConflictError,
    422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
}


def status_error(response: httpx2.Response) -> openai.APIStatusError:
    """The SDK's error for a 4xx/5xx response, built with the public constructors (message,
    response, body) as the SDK builds it: "Error code: N - <the server's message>", the body's
    "error" object (or the body, or its text when it is not JSON) as `body`."""
    text = response.text.strip()
    body: Any = text
    message = f"Error code: {response.status_code}"
    with contextlib.suppress(ValueError):  # a body that is not JSON stays text, as the SDK has it
        body = loads(text)
    if isinstance(body, dict):
        body = body.get("error", body)
        if isinstance(body, dict) and isinstance(body.get("message"), str) and body["message"]:
            message += f" - {body['message']}"
    if response.status_code >= 500:
        cls: type[openai.APIStatusError] = openai.InternalServerError
    else:
        cls = STATUS_ERRORS.get(response.status_code, openai.APIStatusError)
    return cls(message, response=response, body=body)
