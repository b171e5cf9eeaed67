"""A local OpenAI-compatible server for tests and the benchmark: real HTTP on 127.0.0.1, served
by aiohttp.web, started in a background thread
(`FakeOpenAI().start()`) or as a process (`python -m evaluation.testing.fake_openai --port 0`).

Answers are deterministic functions of the prompt (`answer_for`, in fake_answers.py), so tests
can predict them.
Faults are asked for per request with markers anywhere in the messages (tests put them in a
question's text), or for every request through the server settings:

    <<fake:429:N>>        the first N attempts of this request get 429 with Retry-After
    <<fake:retry-after:S>> the Retry-After value in seconds (default 1); <<fake:retry-date>> sends
                          it as an HTTP date instead
    <<fake:500:N>>        the first N attempts get 500
    <<fake:hang:N>>       the first N attempts hang (past any client timeout)
    <<fake:fail>>         every attempt gets 500
    <<fake:malformed>>    a 200 whose content is prose, no scores
    <<fake:nested>>       a 200 whose content is JSON nested 20,000 deep
    <<fake:nul>>, <<fake:surrogate>>  a 200 whose content ends in a NUL or a lone surrogate
    <<fake:wrongkeys>>    a 200 with JSON under the wrong keys
    <<fake:outofrange>>   a 200 with scores of 99
    <<fake:truncated>>    a 200 cut short with finish_reason "length"

Rate limits (`rpm_limit`, `tpm_limit` per `limit_window` seconds, default 60, like OpenAI's per
minute): every answer announces them in `x-ratelimit-limit-*`, `x-ratelimit-remaining-*` and
`x-ratelimit-reset-*` headers; a request past either limit gets 429 with the same headers. Tokens
count as OpenAI estimates them: prompt characters / 4 plus max_tokens.

`json_supported=False` makes the server refuse `response_format` with a 400, like servers that
have no JSON mode. Control and statistics over HTTP: GET /_fake/stats, POST /_fake/pause,
/_fake/resume, /_fake/reset, /_fake/config (JSON body: latency, json_supported).

"Paid" calls are 200 responses delivered to a connected client; a request whose client went away
first (a killed run) is logged as aborted. Duplicates are paid calls with the same request hash
and purpose (headers X-Request-Hash / X-Judge-Purpose sent by the runner, else the body hash).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import email.utils
import hashlib
import json
import socket
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from evaluation.testing.fake_answers import (
    MARKER,
    _prompt_text,
    answer_for,  # noqa: F401 (benchmarks import it here)
    completion,
)
from evaluation.testing.fake_limits import RateLimits

if TYPE_CHECKING:
    from aiohttp import web


def _repeats(paid: list[dict[str, Any]]) -> int:
    """Paid calls beyond the first for the same request hash and purpose."""
    counts = Counter((r["request_hash"], r["purpose"]) for r in paid)
    return sum(c - 1 for c in counts.values() if c > 1)


class FakeOpenAI(RateLimits):
    def __init__(
        self,
        *,
        latency: float = 0.0,
        json_supported: bool = True,
        model_names=None,
        rpm_limit: int | None = None,
        tpm_limit: int | None = None,
        limit_window: float = 60.0,
    ):
        self.latency = latency
        self.json_supported = json_supported
        self.rpm_limit, self.tpm_limit, self.limit_window = rpm_limit, tpm_limit, limit_window
        # GET /v1/models lists these; None answers 404, like servers without a model list.
        self.models: list[str] | None = list(model_names or ["gpt-4-0613", "fake-judge"])
        self._lock = threading.Lock()
        from evaluation.testing.fake_batch import FakeBatches

        self.batch = FakeBatches(self)
        self.reset()
        self.paused = False
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    # --- state ----------------------------------------------------------------------------

    def reset(self) -> None:
        with self._lock:
            self.attempts: Counter[str] = Counter()
            self.log: list[dict[str, Any]] = []
            self.in_flight = 0
            self.max_in_flight = 0
            self.window_start = 0.0
            self.window_requests = 0
            self.window_tokens = 0
        self.batch.reset()

    def log_paid(
        self,
        *,
        request_hash: str,
        purpose: str,
        tokens_in: int,
        tokens_out: int,
        batch: bool = False,
    ) -> None:
        """A paid answer given outside /v1/chat/completions (a Batch API line)."""
        now = time.time()
        with self._lock:
            self.log.append(
                {
                    "t": now,
                    "body_hash": request_hash,
                    "request_hash": request_hash,
                    "purpose": purpose,
                    "status": 200,
                    "paid": True,
                    "aborted": False,
                    "tokens_in": tokens_in,
                    "tokens_out": tokens_out,
                    "done_t": now,
                    "batch": batch,
                }
            )

    def paid(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.log if r["paid"]]

    def duplicates(self) -> int:
        return _repeats(self.paid())

    def stats(self) -> dict[str, Any]:
        with self._lock:
            statuses = Counter(r["status"] for r in self.log)
            paid = [r for r in self.log if r["paid"]]
            return {
                "requests": len(self.log),
                "paid": len(paid),
                "aborted": sum(1 for r in self.log if r["aborted"]),
                "statuses": {str(k): v for k, v in statuses.items()},
                "tokens_in": sum(r["tokens_in"] for r in paid),
                "tokens_out": sum(r["tokens_out"] for r in paid),
                "max_in_flight": self.max_in_flight,
                "in_flight": self.in_flight,
                "connections": len({tuple(r["peer"]) for r in self.log if r.get("peer")}),
                "first_request_t": min((r["t"] for r in self.log), default=None),
                "last_paid_t": max((r["done_t"] for r in paid), default=None),
                "duplicates": _repeats(paid),
            }

    # --- HTTP (aiohttp: its C parser keeps the server's CPU cost per call small) ----------

    def _app(self):
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._chat)
        self.batch.routes(app.router)
        app.router.add_get("/_fake/stats", self._stats_view)
        app.router.add_post("/_fake/{action}", self._control)
        return app

    @staticmethod
    def _json(status: int, data: Any, headers: dict[str, str] | None = None):
        from aiohttp import web

        return web.Response(
            status=status,
            # A lone surrogate (<<fake:surrogate>>) goes out as its JSON escape, "\\ud800".
            body=json.dumps(data, ensure_ascii=False).encode("utf-8", "backslashreplace"),
            content_type="application/json",
            headers=headers,
        )

    async def _models(self, request):
        if self.models is None:  # like servers that have no model list
            return self._json(404, {"error": {"message": "Not found"}})
        return self._json(
            200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}
        )

    async def _stats_view(self, request):
        return self._json(200, self.stats())

    async def _control(self, request):
        action = request.match_info["action"]
        if action == "pause":
            self.paused = True
        elif action == "resume":
            self.paused = False
        elif action == "reset":
            self.reset()
        elif action == "config":
            cfg = json.loads(await request.read() or b"{}")
            self.latency = float(cfg.get("latency", self.latency))
            self.rpm_limit = cfg.get("rpm_limit", self.rpm_limit)
            self.tpm_limit = cfg.get("tpm_limit", self.tpm_limit)
            self.limit_window = float(cfg.get("limit_window", self.limit_window))
            self.json_supported = bool(cfg.get("json_supported", self.json_supported))
        else:
            return self._json(404, {})
        return self._json(200, {"ok": True})

    async def _hold(self, seconds: float) -> None:
        # A client that goes away cancels this (handler cancellation is on): logged as aborted.
        if seconds > 0:
            await asyncio.sleep(seconds)
        while self.paused:
            await asyncio.sleep(0.01)

    async def _hold_until(self, deadline: float) -> None:
        """Hold until `deadline` (the event loop's clock): the configured latency counted from
        the request's arrival, so the server's own work on the request (reading, parsing,
        preparing the answer) happens inside it rather than after it."""
        await self._hold(deadline - asyncio.get_running_loop().time())

    async def _chat(self, request):
        arrived = asyncio.get_running_loop().time()
        body = await request.read()
        try:
            req = json.loads(body)
            messages = req["messages"]
        except (ValueError, KeyError, TypeError):
            return self._json(400, {"error": {"message": "invalid JSON body"}})
        body_hash = hashlib.sha256(body).hexdigest()
        prompt = _prompt_text(messages)
        markers = {m.group(1): m.group(2) for m in MARKER.finditer(prompt)}
        entry = {
            "t": time.time(),
            "body_hash": body_hash,
            "request_hash": request.headers.get("x-request-hash") or body_hash,
            "purpose": request.headers.get("x-judge-purpose", ""),
            # The client's address and port: one per connection, to tell keep-alive from not.
            "peer": request.transport.get_extra_info("peername") if request.transport else None,
            "status": None,
            "paid": False,
            "aborted": False,
            "tokens_in": 0,
            "tokens_out": 0,
        }
        with self._lock:
            self.attempts[body_hash] += 1
            attempt = self.attempts[body_hash]
            self.log.append(entry)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(req, messages, markers, attempt, entry, arrived)
        except asyncio.CancelledError:
            entry["aborted"] = True
            entry["status"] = entry["status"] or "aborted"
            raise
        finally:
            with self._lock:
                self.in_flight -= 1

    def _too_many(self, markers: dict[str, str | None]):
        """The 429 a <<fake:429:N>> marker asks for, with its Retry-After."""
        wait = markers.get("retry-after") or "1"
        value = wait
        if "retry-date" in markers:
            value = email.utils.formatdate(time.time() + float(wait), usegmt=True)
        return self._json(
            429,
            {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
            {"retry-after": value},
        )

    async def _answer(self, req, messages, markers, attempt, entry, arrived):
        json_mode = (req.get("response_format") or {}).get("type") == "json_object"
        if json_mode and not self.json_supported:
            entry["status"] = 400
            return self._json(
                400,
                {
                    "error": {
                        "message": "response_format is not supported by this server",
                        "type": "invalid_request_error",
                        "param": "response_format",
                    }
                },
            )
        admitted, limit_headers = self._admit(req, _prompt_text(messages))
        if not admitted:
            entry["status"] = 429
            return self._json(
                429,
                {"error": {"message": "Rate limit reached", "type": "requests"}},
                limit_headers,
            )
        if "hang" in markers and attempt <= int(float(markers["hang"] or 1)):
            entry["status"] = "hang"
            await self._hold(120.0)
            arrived = asyncio.get_running_loop().time()
        too_many = "429" in markers and attempt <= int(float(markers["429"] or 1))
        fails = "fail" in markers or (
            "500" in markers and attempt <= int(float(markers["500"] or 1))
        )
        # The answer is made before the wait, as a real server's latency includes its work.
        answer = (
            None if too_many or fails else self._prepared(req, messages, markers, attempt, entry)
        )
        await self._hold_until(arrived + self.latency)
        if too_many:
            entry["status"] = 429
            return self._too_many(markers)
        if answer is None:
            entry["status"] = 500
            return self._json(500, {"error": {"message": "The server had an error"}})
        return self._completion(answer, entry, limit_headers)

    @staticmethod
    def _prepared(req, messages, markers, attempt, entry) -> tuple[dict, int, int]:
        return completion(req, messages, markers, f"chatcmpl-{entry['body_hash'][:12]}-{attempt}")

    def _completion(self, answer: tuple[dict, int, int], entry, limit_headers):
        """The 200 answer: a chat completion, clean or as the markers ask."""
        data, tokens_in, tokens_out = answer
        entry.update(
            status=200, paid=True, tokens_in=tokens_in, tokens_out=tokens_out, done_t=time.time()
        )
        if limit_headers:
            with self._lock:
                limit_headers = self._limit_headers(time.time())
        return self._json(200, data, limit_headers or None)

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, port: int = 0) -> FakeOpenAI:
        from aiohttp import web

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        self.port = sock.getsockname()[1]
        loop = self._loop = asyncio.new_event_loop()
        started = threading.Event()

        async def serve() -> None:
            runner = web.AppRunner(self._app(), handler_cancellation=True, access_log=None)
            self._runner = runner
            await runner.setup()
            await web.SockSite(runner, sock, backlog=2048).start()
            started.set()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(serve())
            loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True, name="fake-openai")
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        loop, runner = self._loop, self._runner
        if self._thread is None or loop is None:
            return
        if runner is not None:  # None only when the server failed to start
            fut = asyncio.run_coroutine_threadsafe(runner.cleanup(), loop)
            with contextlib.suppress(Exception):  # stopping a test server
                fut.result(timeout=5)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=5)
        self._thread = None


def main() -> None:  # pragma: no cover - used by the benchmark as a separate process
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--no-json", action="store_true", help="refuse response_format")
    parser.add_argument("--rpm", type=int, default=None, help="requests per window, then 429")
    parser.add_argument("--tpm", type=int, default=None, help="tokens per window, then 429")
    parser.add_argument("--window", type=float, default=60.0, help="rate limit window, seconds")
    args = parser.parse_args()
    server = FakeOpenAI(
        latency=args.latency,
        json_supported=not args.no_json,
        rpm_limit=args.rpm,
        tpm_limit=args.tpm,
        limit_window=args.window,
    ).start(args.port)
    print(f"PORT {server.port}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
