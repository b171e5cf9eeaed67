"""serve_load.py's simulated annotators: crowd workers over HTTP, one cookie jar each, run as
threads inside a few client processes.

Most behave: enter through the Prolific URL, open the item, think, rate, repeat (a few skip). The
misbehaving share (--abuse-rate, default 10%) does one of three things all the time:

- ``double``: posts every rating twice, as a double click does; the second answer must not be a
  5xx, and the rating must be stored once (the integrity counts check that);
- ``abandon``: rates a few items, then opens one and walks away without a word (about one item
  in three), leaving the reservation to lapse;
- ``bad``: enters once with a NUL byte in its worker id, and before each real rating posts a
  hostile one (a superscript digit, a 5,000-digit number, NUL, a missing choice); each must be
  answered 4xx, never 5xx.

Every answer >= 500, from any client, is counted and printed by the driver.
"""

from __future__ import annotations

import http.cookiejar
import random
import re
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

BEHAVIOURS = ("double", "abandon", "bad")
HOSTILE_RATINGS = [
    {"choice": "²", "active_ms": "12000"},
    {"choice": "left", "active_ms": "9" * 5000},
    {"choice": "left", "active_ms": "²"},
    {"choice": "left", "active_ms": "٣"},
    {"choice": "left\x00", "active_ms": "12000"},
    {"active_ms": "12000"},
    {"choice": "left", "active_ms": "-1"},
]
HTTPS_HANDLER = urllib.request.HTTPSHandler(context=ssl.create_default_context())


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


# What every annotator of a run shares: base URL, study public id, stop time, mean think seconds,
# skip rate, the study-complete event, htmx mode, arrival seconds.
Common = tuple[str, str, float, float, float, Any, bool, float]


class Annotator(threading.Thread):
    UUID = re.compile(r"/a/([0-9a-f-]{36})/")

    def __init__(
        self, i, base, study_pid, stop_at, think, skip_rate, complete, htmx, ramp, behaviour
    ):
        super().__init__(daemon=True)
        self.htmx = htmx
        self.complete = complete
        self.i, self.base, self.study_pid = i, base, study_pid
        self.stop_at, self.think, self.skip_rate = stop_at, think, skip_rate
        self.ramp = ramp
        self.behaviour = behaviour  # "normal" or one of BEHAVIOURS
        self.rng = random.Random(i)
        self.jar = http.cookiejar.CookieJar()
        # One TLS context for all: build_opener would otherwise load the CA store for each
        # annotator (about 40 ms of CPU each, 8 s for 200, on the cores the server runs on).
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), NoRedirect(), HTTPS_HANDLER
        )
        self.lat: dict[str, list[float]] = {"entry": [], "page": [], "submit": [], "skip": []}
        self.lat.update({"double": [], "bad": []})
        self.timeline: list[tuple[float, float]] = []  # (time.time() at the start, seconds)
        self.acked: list[str] = []
        self.errors: list[str] = []
        self.server_errors: list[str] = []  # "status path" of every answer >= 500
        self.bad_answers: dict[int, int] = {}  # status -> count, for the hostile posts
        self.double_same = self.double_diff = self.abandoned = 0
        self.finished = False

    def request(self, kind, path, data=None, htmx=False):
        headers = {"HX-Request": "true"} if htmx else {}
        if data is not None:
            token = next((c.value for c in self.jar if c.name == "csrftoken"), "")
            headers["X-CSRFToken"] = token
            data = urllib.parse.urlencode(data).encode()
        req = urllib.request.Request(self.base + path, data=data, headers=headers)
        t = time.perf_counter()
        try:
            resp = self.opener.open(req, timeout=30)
            headers, status, body = resp.headers, resp.status, resp.read()
        except urllib.error.HTTPError as e:
            headers, status, body = e.headers, e.code, e.read()
        # htmx answers name the next page in HX-Push-Url / HX-Redirect instead of Location.
        location = (
            headers.get("Location") or headers.get("HX-Push-Url") or headers.get("HX-Redirect")
        ) or ""
        elapsed = time.perf_counter() - t
        self.lat[kind].append(elapsed)
        self.timeline.append((time.time() - elapsed, elapsed))
        if status >= 500:
            self.server_errors.append(f"{status} {path.split('?')[0]}")
        return status, location, body

    def wait_for_work(self) -> bool:
        """After the end page: wait, and say whether to ask again (the study is not complete
        and there is time left)."""
        self.pause()
        return not self.complete.is_set() and time.time() < self.stop_at

    def pause(self):
        if self.think > 0:
            time.sleep(self.rng.uniform(0.5, 1.5) * self.think)

    def run(self):
        try:
            self.loop()
        except Exception as e:  # noqa: BLE001 - reported in the summary
            self.errors.append(repr(e))

    def enter(self):
        worker = f"bench-{self.i}"
        if self.behaviour == "bad":
            # A NUL byte in the worker id: PostgreSQL cannot store it; the answer must be a 4xx.
            q = urllib.parse.urlencode({"PROLIFIC_PID": worker + "\x00", "STUDY_ID": "bench"})
            status, _, _ = self.request("bad", f"/s/{self.study_pid}/crowd/?{q}")
            self.bad_answers[status] = self.bad_answers.get(status, 0) + 1
        q = urllib.parse.urlencode(
            {"PROLIFIC_PID": worker, "STUDY_ID": "bench", "SESSION_ID": f"s{self.i}"}
        )
        status, location, _ = self.request("entry", f"/s/{self.study_pid}/crowd/?{q}")
        if status == 200:  # the instructions and the consent box; agreeing serves the first item
            status, location, _ = self.request(
                "entry", f"/s/{self.study_pid}/crowd/", {"consent": "yes"}
            )
        if status != 302:
            raise RuntimeError(f"entry {status}")
        return location

    def ok(self, status, htmx) -> bool:
        return status in (200, 204) if htmx else status == 302

    def rate(self, pid, htmx=False):
        """Skip or rate the item, misbehaving as this client does; (status, location)."""
        if self.rng.random() < self.skip_rate:
            return self.request("skip", f"/a/{pid}/skip/", {}, htmx=htmx)[:2]
        if self.behaviour == "bad":
            hostile = self.rng.choice(HOSTILE_RATINGS)
            status, _, _ = self.request("bad", f"/a/{pid}/", hostile, htmx=htmx)
            self.bad_answers[status] = self.bad_answers.get(status, 0) + 1
        payload = {
            "choice": self.rng.choice(["left", "right", "tie", "both_bad"]),
            "active_ms": "12000",
        }
        status, location, _ = self.request("submit", f"/a/{pid}/", payload, htmx=htmx)
        if self.ok(status, htmx):
            self.acked.append(pid)
            if self.behaviour == "double":
                again, location2, _ = self.request("double", f"/a/{pid}/", payload, htmx=htmx)
                if again >= 500:
                    return again, location2
                if (again, location2) == (status, location):
                    self.double_same += 1
                else:
                    self.double_diff += 1
        return status, location

    def abandons(self) -> bool:
        """An abandoning client leaves for good from an open item, about one item in three."""
        if self.behaviour != "abandon" or self.rng.random() > 0.33:
            return False
        self.abandoned += 1
        return True

    def back_for_more(self, location: str, *, htmx: bool) -> str:
        """At the end page: like a crowd that keeps arriving, come back while the study still
        needs ratings (an item skipped or abandoned by someone else may be free again). The next
        answer's location, or "" to stop."""
        if "/done/" not in location:
            raise RuntimeError(f"unexpected answer {location!r}")
        self.finished = True
        if not self.wait_for_work():
            return ""
        _status, location, _ = self.request("entry", f"/s/{self.study_pid}/next/", htmx=htmx)
        return location

    def open_page(self, path):
        status, _, _ = self.request("page", path)
        if status != 200:
            raise RuntimeError(f"page {status}")

    def loop(self):
        """Rate items until the time is up. Without JavaScript each item is a page (GET) and each
        POST answers with a redirect; as a browser with JavaScript (htmx) only the first item is
        a whole page, then each POST returns the next item's fragment."""
        time.sleep(self.rng.uniform(0, max(self.ramp, 0.1)))  # staggered arrival
        # The consent answers with a redirect to the first item (or the end page).
        location = self.enter()
        if self.htmx and self.UUID.search(location):
            self.open_page(location)
        while time.time() < self.stop_at:
            m = self.UUID.search(location)
            if not m:
                location = self.back_for_more(location, htmx=self.htmx)
                if not location:
                    return
                continue
            pid = m.group(1)
            if not self.htmx:
                self.open_page(f"/a/{pid}/")
            self.pause()
            if self.abandons():
                return
            status, location = self.rate(pid, htmx=self.htmx)
            if not self.ok(status, self.htmx):
                raise RuntimeError(f"post {status}")


def behaviour_of(i: int, abuse_rate: float) -> str:
    """Client i's behaviour: a fixed, seeded share misbehaves, spread over the three kinds."""
    rng = random.Random(f"abuse-{i}")
    return rng.choice(BEHAVIOURS) if rng.random() < abuse_rate else "normal"


def run_group(indices: list[int], common: Common, abuse_rate: float, results) -> None:
    """One client process: its share of the annotators as threads; reports what they measured."""
    bots = [Annotator(i, *common, behaviour_of(i, abuse_rate)) for i in indices]
    for b in bots:
        b.start()
    stop_at = common[2]
    for b in bots:
        b.join(timeout=max(0.1, stop_at - time.time() + 60))
    results.put(
        [
            {"lat": b.lat, "acked": b.acked, "errors": b.errors, "finished": b.finished,
             "timeline": b.timeline, "behaviour": b.behaviour, "server_errors": b.server_errors,
             "bad_answers": b.bad_answers, "double_same": b.double_same,
             "double_diff": b.double_diff, "abandoned": b.abandoned}
            for b in bots
        ]
    )  # fmt: skip
