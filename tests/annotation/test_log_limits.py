"""The log-flood cap: a burst of the same 4xx warning writes at most 20 lines a minute, other
kinds and errors still get through, and the console handler follows LOG_LEVEL."""

from __future__ import annotations

import logging

from django.conf import settings

from config import log_limits
from config.log_limits import PerMinuteCap


def _record(msg: str, *args, level: int = logging.WARNING, name: str = "django.request"):
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_a_burst_of_one_kind_of_warning_is_cut_to_the_cap_per_minute(monkeypatch):
    now = [6000.0]
    monkeypatch.setattr(log_limits.time, "time", lambda: now[0])
    cap = PerMinuteCap(per_minute=20)
    passed = [cap.filter(_record("Not Found: %s", f"/x/{i}")) for i in range(25)]
    assert passed == [True] * 20 + [False] * 5
    # Another kind, and any error, still pass.
    assert cap.filter(_record("Bad Request: %s", "/a/"))
    assert cap.filter(_record("Not Found: %s", "/y/", level=logging.ERROR))
    # The next minute starts afresh and says what was left out.
    now[0] += 60
    first = _record("Not Found: %s", "/z/")
    assert cap.filter(first)
    assert first.getMessage() == "Not Found: /z/ [5 more like this were left out earlier]"
    assert cap.filter(_record("Not Found: %s", "/z/"))


def test_the_console_handler_follows_log_level_and_caps_floods():
    console = next(h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler)
    assert console.level == logging.getLevelName(settings.LOG_LEVEL)
    assert any(isinstance(f, PerMinuteCap) for f in console.filters)
