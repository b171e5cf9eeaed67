"""Keeping a judge run inside its rate limits: the judge's own requests/tokens per minute, and
what the server announces in its `x-ratelimit-*` headers (OpenAI, Azure, vLLM gateways...).

Every call asks `RateLimiter.acquire` before it is sent and hands the response's headers to
`observe`. The judge's own limits are token buckets that refill continuously and hold at most one
second's worth (so a run starts without a burst of a whole minute). The server's announcement
is a count of requests and tokens left until a reset time: once the run has spent what was left,
calls wait for the reset instead of running into 429s. A 429 pauses every call (not just the one
that got it) until the server's reset or Retry-After.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Mapping

DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
RESET_CAP = 600.0  # never trust a server to park a run for longer than this in one go


def reset_seconds(value: str | None) -> float | None:
    """OpenAI's reset durations ('1s', '6m0s', '20ms', '1h2m3.5s') or plain seconds ('0.5')."""
    if not value:
        return None
    value = value.strip()
    if not value.isascii():
        return None
    try:
        return min(RESET_CAP, max(0.0, float(value)))
    except ValueError:
        pass
    parts = DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return None
    return min(RESET_CAP, sum(float(n) * UNIT_SECONDS[u] for n, u in parts))


def _int(value: str | None) -> int | None:
    if value is None or not value.strip().isascii() or not value.strip().isdigit():
        return None
    return int(value.strip())


def _minus(value: int | None, taken: int) -> int | None:
    return None if value is None else value - taken


def estimate_tokens(body: Mapping) -> int:
    """What a request counts against a tokens-per-minute limit: its prompt (deliberately high:
    one token per non-ASCII character, one per four ASCII characters) plus max_tokens, as
    OpenAI counts it."""
    text = "".join(str(m.get("content", "")) for m in body.get("messages", ()))
    extra_bytes = len(text.encode("utf-8")) - len(text)
    non_ascii = min(len(text), extra_bytes)  # each takes at least two bytes
    return non_ascii + (len(text) - non_ascii + 3) // 4 + int(body.get("max_tokens") or 0)


class _Bucket:
    """A token bucket: `per_minute` refilled continuously, holding at most one second's worth
    (at least one request's worth, so a single large request can always go)."""

    def __init__(self, per_minute: int, clock: Callable[[], float]) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.clock = clock
        self.at = clock()

    def wait_for(self, amount: float) -> float:
        """Seconds until `amount` can be taken (0: take it now)."""
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float) -> None:
        self.level -= amount


class _Announced:
    """What the server said is left (requests or tokens) and when its window resets."""

    def __init__(self) -> None:
        self.left: int | None = None
        self.reset_at = 0.0

    def observe(self, remaining: int | None, reset: float | None, now: float) -> None:
        if remaining is None:
            return
        reset_at = now + (reset if reset is not None else 1.0)
        if self.left is None or now >= self.reset_at:
            self.left, self.reset_at = remaining, reset_at
        else:  # answers arrive out of order: the lowest count of the window is the latest
            self.left = min(self.left, remaining)
            self.reset_at = max(self.reset_at, reset_at)

    def wait_for(self, amount: int, now: float) -> float:
        if self.left is None:
            return 0.0
        if now >= self.reset_at:
            self.left = None  # a new window: unknown until the next answer says
            return 0.0
        return 0.0 if self.left >= amount else self.reset_at - now

    def take(self, amount: int) -> None:
        if self.left is not None:
            self.left -= amount


class RateLimiter:
    def __init__(
        self,
        *,
        rpm: int | None = None,
        tpm: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.requests = _Bucket(rpm, clock) if rpm else None
        self.tokens = _Bucket(tpm, clock) if tpm else None
        self.server_requests = _Announced()
        self.server_tokens = _Announced()
        self.paused_until = 0.0
        # Sent and not answered yet: the server may not have counted them in what it announces.
        self.in_flight = 0
        self.tokens_in_flight = 0
        self.waited = 0.0  # seconds calls spent waiting here, for the run's log
        self._lock = asyncio.Lock()

    def _wait(self, tokens: int) -> float:
        now = self.clock()
        waits = [self.paused_until - now]
        waits.append(self.server_requests.wait_for(1, now))
        waits.append(self.server_tokens.wait_for(tokens, now))
        if self.requests:
            waits.append(self.requests.wait_for(1))
        if self.tokens:
            waits.append(self.tokens.wait_for(tokens))
        return max(waits)

    async def acquire(self, body: Mapping) -> int:
        """Wait until one more request of this size fits every limit, then count it. Returns
        the tokens counted, for `observe` and `release`."""
        watching_tokens = self.tokens is not None or self.server_tokens.left is not None
        tokens = estimate_tokens(body) if watching_tokens else 0
        # One call at a time decides, so waiting calls go in order and none jumps the queue.
        async with self._lock:
            while (wait := self._wait(tokens)) > 0:
                self.waited += wait
                await asyncio.sleep(wait)
            for limit, amount in (
                (self.requests, 1),
                (self.tokens, tokens),
                (self.server_requests, 1),
                (self.server_tokens, tokens),
            ):
                if limit is not None:
                    limit.take(amount)
            self.in_flight += 1
            self.tokens_in_flight += tokens
        return tokens

    def release(self, tokens: int) -> None:
        """The call is over (answered or not)."""
        self.in_flight -= 1
        self.tokens_in_flight -= tokens

    def observe(self, headers: Mapping | None, *, tokens: int = 0, status: int = 200) -> None:
        """Read the server's announcement for a call still counted in flight; a 429 pauses every
        call until its reset. The other calls in flight may not be in the server's count yet
        (they can reach it after this answer left), so they are taken off what it says is left."""
        if headers is None:
            return
        now = self.clock()
        others = max(0, self.in_flight - 1)
        other_tokens = max(0, self.tokens_in_flight - tokens)
        reset_requests = reset_seconds(headers.get("x-ratelimit-reset-requests"))
        reset_tokens = reset_seconds(headers.get("x-ratelimit-reset-tokens"))
        self.server_requests.observe(
            _minus(_int(headers.get("x-ratelimit-remaining-requests")), others),
            reset_requests,
            now,
        )
        self.server_tokens.observe(
            _minus(_int(headers.get("x-ratelimit-remaining-tokens")), other_tokens),
            reset_tokens,
            now,
        )
        if status == 429:
            resets = [r for r in (reset_requests, reset_tokens) if r]
            if resets:
                self.paused_until = max(self.paused_until, now + max(resets))

    def pause(self, seconds: float) -> None:
        """Hold every call for this long (a 429's Retry-After)."""
        self.paused_until = max(self.paused_until, self.clock() + min(seconds, RESET_CAP))
