"""A cap on repeated warnings, so a flood of bad requests cannot flood the log (and spend the app
server's CPU writing it).

Django logs every 4xx answer as a warning on `django.request` ("Not Found: %s", "Bad Request: %s",
"Forbidden (CSRF token missing.): %s"). One client hammering a bad URL would write a line per
request. `PerMinuteCap` lets through at most `per_minute` records of each kind (logger and message
template, not the path) in each minute; the next record of a kind let through says how many were
left out before it. Errors (5xx, exceptions) always pass.
"""

from __future__ import annotations

import logging
import threading
import time


class PerMinuteCap(logging.Filter):
    def __init__(self, per_minute: int = 20) -> None:
        super().__init__()
        self.per_minute = per_minute
        self._lock = threading.Lock()
        # kind -> [minute, passed this minute, left out this minute]
        self._counts: dict[tuple[str, str], list[int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        kind = (record.name, str(record.msg))
        minute = int(time.time() // 60)
        with self._lock:
            count = self._counts.get(kind)
            if count is None or count[0] != minute:
                left_out = count[2] if count is not None else 0
                if len(self._counts) > 1000:  # kinds are message templates: a few dozen at most
                    self._counts.clear()
                self._counts[kind] = [minute, 1, 0]
                if left_out:
                    record.msg = f"{record.msg} [{left_out} more like this were left out earlier]"
                return True
            if count[1] >= self.per_minute:
                count[2] += 1
                return False
            count[1] += 1
            return True
