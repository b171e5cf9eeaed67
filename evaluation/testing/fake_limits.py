"""Rate limits of the local test server (FakeOpenAI): a fixed window of `limit_window` seconds
with at most `rpm_limit` requests and `tpm_limit` tokens, announced in OpenAI's headers."""

from __future__ import annotations

import threading
import time
from typing import Any


class RateLimits:
    rpm_limit: int | None
    tpm_limit: int | None
    limit_window: float
    window_start: float
    window_requests: int
    window_tokens: int
    _lock: threading.Lock

    def _limit_headers(self, now: float) -> dict[str, str]:
        reset = f"{max(0.0, self.window_start + self.limit_window - now):.3f}s"
        headers = {}
        if self.rpm_limit:
            headers["x-ratelimit-limit-requests"] = str(self.rpm_limit)
            left = max(0, self.rpm_limit - self.window_requests)
            headers["x-ratelimit-remaining-requests"] = str(left)
            headers["x-ratelimit-reset-requests"] = reset
        if self.tpm_limit:
            headers["x-ratelimit-limit-tokens"] = str(self.tpm_limit)
            left = max(0, self.tpm_limit - self.window_tokens)
            headers["x-ratelimit-remaining-tokens"] = str(left)
            headers["x-ratelimit-reset-tokens"] = reset
        return headers

    def _admit(self, req: dict[str, Any], prompt: str) -> tuple[bool, dict[str, str]]:
        """Count the request against the window (admitted) or refuse it; with the headers."""
        if not (self.rpm_limit or self.tpm_limit):
            return True, {}
        tokens = (len(prompt) + 3) // 4 + int(req.get("max_tokens") or 0)
        with self._lock:
            now = time.time()
            if now >= self.window_start + self.limit_window:
                self.window_start, self.window_requests, self.window_tokens = now, 0, 0
            over = (self.rpm_limit and self.window_requests + 1 > self.rpm_limit) or (
                self.tpm_limit and self.window_tokens + tokens > self.tpm_limit
            )
            if not over:
                self.window_requests += 1
                self.window_tokens += tokens
            return not over, self._limit_headers(now)
