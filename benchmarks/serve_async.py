"""serve_load.py --ramp's simulated annotators: the same crowd as serve_clients.py (enter through
the Prolific URL, open, think, rate; the misbehaving share double-submits, abandons or posts
hostile input), written with asyncio so that one client process carries hundreds of annotators
on a few milliseconds of CPU per second. A thread per annotator (serve_clients.py) costs about ten
times more CPU per request, on the same two cores the server needs. Each annotator speaks plain
HTTP/1.1 over one keep-alive connection with its own cookies (`Http11`, below): an HTTP client
library does much more per request (redirect handling, cookie domains, connection pools) that
these clients never need, and the CPU it spends is taken from the server under test.

The ramp: annotators join in steps (step k brings the total to levels[k]), arriving evenly over
the first `arrive` seconds of their step, and stay until the driver says stop. At the end of
each step every client process reports the requests that started in the step's steady part
(after the arrivals) and its own CPU time; the driver decides whether to go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import resource
import time
import urllib.parse
from dataclasses import dataclass, field

from serve_clients import HOSTILE_RATINGS, behaviour_of

UUID = re.compile(r"/a/([0-9a-f-]{36})/")


@dataclass
class Plan:
    base: str
    study_pid: str
    t0: float  # when step 0 starts (time.time())
    levels: list[int]
    step_seconds: float
    arrive: float
    think: float
    skip_rate: float
    abuse_rate: float
    htmx: bool

    def step_start(self, k: int) -> float:
        return self.t0 + k * self.step_seconds

    def join_time(self, i: int) -> float:
        """Annotator i joins in the first step whose level exceeds i, spread over `arrive`."""
        k = next(k for k, level in enumerate(self.levels) if i < level)
        below = self.levels[k - 1] if k else 0
        share = (i - below) / max(1, self.levels[k] - below)
        return self.step_start(k) + share * self.arrive


@dataclass
class Tally:
    """What one client process measured: (start, seconds, kind) per request, and the rest."""

    requests: list[tuple[float, float, str]] = field(default_factory=list)
    acked: list[tuple[float, str]] = field(default_factory=list)  # (time, assignment id)
    server_errors: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    bad_answers: dict[int, int] = field(default_factory=dict)
    double_same: int = 0
    double_diff: int = 0
    abandoned: int = 0
    behaviours: dict[str, int] = field(default_factory=dict)


class Http11:
    """One annotator's connection: HTTP/1.1 requests over one keep-alive socket, reopened when the
    server has closed it, and the cookies the server set (sessionid, csrftoken)."""

    # The server closes an idle connection after a while (gunicorn's --keep-alive, 2 s): one
    # idle longer than this is not reused, so a request is never written into a closing socket.
    IDLE_REUSE = 1.5
    TIMEOUT = 30.0

    def __init__(self, base: str) -> None:
        url = urllib.parse.urlsplit(base)
        self.host, self.port, self.netloc = url.hostname or "", url.port or 80, url.netloc
        self.cookies: dict[str, str] = {}
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.idle_since = 0.0

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def request(self, method: str, path: str, data, headers: dict[str, str]):
        """(status, headers with lower-case names) of one request; the body is read and dropped."""
        body = urllib.parse.urlencode(data).encode() if data is not None else b""
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.netloc}"]
        if self.cookies:
            head.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        head += [f"{k}: {v}" for k, v in headers.items()]
        if data is not None:
            head += ["Content-Type: application/x-www-form-urlencoded"]
            head += [f"Content-Length: {len(body)}"]
        raw = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        stale = time.monotonic() - self.idle_since > self.IDLE_REUSE
        if self.writer is None or self.reader is None or self.reader.at_eof() or stale:
            self.close()
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(raw)
        status, fields = await asyncio.wait_for(self._response(self.reader), self.TIMEOUT)
        self.idle_since = time.monotonic()
        if fields.get("connection", "").lower() == "close":
            self.close()
        return status, fields

    async def _response(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
        lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        version, status_text, _ = lines[0].split(" ", 2)
        status = int(status_text)
        fields: dict[str, str] = {} if version == "HTTP/1.1" else {"connection": "close"}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "set-cookie":
                self._set_cookie(value)
            elif name:
                fields[name] = value
        if "content-length" in fields:
            await reader.readexactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding", "").lower() == "chunked":
            while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
                await reader.readexactly(size + 2)
            await reader.readuntil(b"\r\n")
        elif status >= 200 and status not in (204, 304):
            await reader.read()  # no length: the body ends with the connection
            fields["connection"] = "close"
        return status, fields

    def _set_cookie(self, value: str) -> None:
        pair, *attrs = value.split(";")
        name, _, cookie = pair.strip().partition("=")
        if any(a.strip().lower() == "max-age=0" for a in attrs):
            self.cookies.pop(name, None)
        else:
            self.cookies[name] = cookie


class Annotator:
    def __init__(self, i: int, plan: Plan, tally: Tally, stop: asyncio.Event):
        self.i, self.plan, self.tally, self.stop = i, plan, tally, stop
        self.rng = random.Random(i)
        self.behaviour = behaviour_of(i, plan.abuse_rate)
        tally.behaviours[self.behaviour] = tally.behaviours.get(self.behaviour, 0) + 1

    async def request(self, session: Http11, kind, path, data=None, htmx=False):
        headers = {"HX-Request": "true"} if htmx else {}
        if data is not None:
            headers["X-CSRFToken"] = session.cookies.get("csrftoken", "")
        method = "POST" if data is not None else "GET"
        start, t = time.time(), time.perf_counter()
        try:
            status, h = await session.request(method, path, data, headers)
        except (OSError, EOFError, ValueError, TimeoutError) as exc:
            self.tally.errors.append(f"{kind}: {exc!r}")
            raise
        self.tally.requests.append((start, time.perf_counter() - t, kind))
        if status >= 500:
            self.tally.server_errors.append(f"{status} {path.split('?')[0]}")
        location = h.get("location") or h.get("hx-push-url") or h.get("hx-redirect") or ""
        return status, location

    async def think(self) -> None:
        delay = self.rng.uniform(0.5, 1.5) * self.plan.think
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), timeout=delay)

    async def enter(self, session) -> str:
        worker, pid = f"bench-{self.i}", self.plan.study_pid
        if self.behaviour == "bad":
            q = urllib.parse.urlencode({"PROLIFIC_PID": worker + "\x00", "STUDY_ID": "bench"})
            status, _ = await self.request(session, "bad", f"/s/{pid}/crowd/?{q}")
            self.tally.bad_answers[status] = self.tally.bad_answers.get(status, 0) + 1
        q = urllib.parse.urlencode(
            {"PROLIFIC_PID": worker, "STUDY_ID": "bench", "SESSION_ID": f"s{self.i}"}
        )
        status, location = await self.request(session, "entry", f"/s/{pid}/crowd/?{q}")
        if status == 200:
            status, location = await self.request(
                session, "entry", f"/s/{pid}/crowd/", {"consent": "yes"}
            )
        if status != 302:
            raise RuntimeError(f"entry {status}")
        return location

    async def rate(self, session, pid: str) -> tuple[int, str]:
        htmx = self.plan.htmx
        if self.rng.random() < self.plan.skip_rate:
            return await self.request(session, "skip", f"/a/{pid}/skip/", {}, htmx=htmx)
        if self.behaviour == "bad":
            hostile = self.rng.choice(HOSTILE_RATINGS)
            status, _ = await self.request(session, "bad", f"/a/{pid}/", hostile, htmx=htmx)
            self.tally.bad_answers[status] = self.tally.bad_answers.get(status, 0) + 1
        payload = {"choice": self.rng.choice(["left", "right", "tie", "both_bad"]),
                   "active_ms": "12000"}  # fmt: skip
        status, location = await self.request(session, "submit", f"/a/{pid}/", payload, htmx=htmx)
        if status in ((200, 204) if htmx else (302,)):
            self.tally.acked.append((time.time(), pid))
            if self.behaviour == "double":
                again = await self.request(session, "double", f"/a/{pid}/", payload, htmx=htmx)
                if again == (status, location):
                    self.tally.double_same += 1
                else:
                    self.tally.double_diff += 1
        return status, location

    async def run(self) -> None:
        try:  # wait for this annotator's turn, or the end of the ramp
            delay = max(0.0, self.plan.join_time(self.i) - time.time())
            await asyncio.wait_for(self.stop.wait(), timeout=delay)
            return
        except TimeoutError:
            pass
        session = Http11(self.plan.base)
        try:
            await self.loop(session)
        except Exception as exc:  # noqa: BLE001 - reported in the summary
            self.tally.errors.append(repr(exc))
        finally:
            session.close()

    async def loop(self, session) -> None:
        location = await self.enter(session)
        if self.plan.htmx and UUID.search(location):
            await self.request(session, "page", location)
        while not self.stop.is_set():
            m = UUID.search(location)
            if not m:
                if "/done/" not in location:
                    raise RuntimeError(f"unexpected answer {location!r}")
                await self.think()  # nothing free now: come back later
                _, location = await self.request(
                    session, "entry", f"/s/{self.plan.study_pid}/next/", htmx=self.plan.htmx
                )
                continue
            pid = m.group(1)
            if not self.plan.htmx:
                status, _ = await self.request(session, "page", f"/a/{pid}/")
                if status != 200:
                    raise RuntimeError(f"page {status}")
            await self.think()
            if self.stop.is_set():
                return
            if self.behaviour == "abandon" and self.rng.random() < 0.33:
                self.tally.abandoned += 1
                return
            status, location = await self.rate(session, pid)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def _run(indices: list[int], plan: Plan, stop_flag, reports) -> Tally:
    tally, stop = Tally(), asyncio.Event()
    tasks = [asyncio.create_task(Annotator(i, plan, tally, stop).run()) for i in indices]
    for k in range(len(plan.levels)):
        end = plan.step_start(k + 1)
        while time.time() < end and not stop_flag.is_set():
            await asyncio.sleep(min(0.2, max(0.0, end - time.time())))
        if stop_flag.is_set():
            break
        lo, hi = plan.step_start(k) + plan.arrive, end
        part = [(d, kind) for s, d, kind in tally.requests if lo <= s < hi]
        reports.put((k, part, cpu_seconds(), len(tally.server_errors), len(tally.errors)))
    stop.set()
    await asyncio.wait(tasks, timeout=35)
    return tally


def run_async_group(indices: list[int], plan: Plan, stop_flag, reports, results) -> None:
    """One client process: its annotators as asyncio tasks; a report per step, then the tally."""
    tally = asyncio.run(_run(indices, plan, stop_flag, reports))
    results.put(tally)
