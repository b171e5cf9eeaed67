"""CPU per annotator request, measured in one process: what a request costs the app server and the
database, independent of how busy the (shared) machine is.

serve_load.py measures latency under load, which depends on everything else the machine runs.
This script answers the question behind it, "how much work is one request?": it loads a small
pairwise study into a throwaway PostgreSQL database (serve_data.py), runs Django in this process
as the server runs it (DEBUG off, the Redis cache and sessions when Redis answers, persistent
connection), lets --annotators crowd workers enter, then drives the WSGI handler directly
(django.test.Client, no sockets) through --rounds of: GET the item page, POST the rating as the
page's JavaScript does (htmx: records it and answers with the next item's fragment).

It prints, per request kind: the app process's CPU ms (time.process_time, so other processes on
the machine do not count), the database backend's CPU ms (/proc/<pid>/schedstat of the
connection's backend), and the SQL statements per request. --profile FILE writes a cProfile of the POSTs
(of the GETs with --profile-kind GET).

Usage: .venv/bin/python benchmarks/serve_cpu.py [--annotators 50] [--rounds 20] [--profile F]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from serve_data import log, prepare_database, server_env

ROOT = Path(__file__).resolve().parents[1]


def _configure(db_url: str) -> None:
    os.environ.update(server_env(db_url))
    os.environ["STATIC_ROOT"] = "/tmp/serve_cpu_static"
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("collectstatic", interactive=False, verbosity=0)


_BACKEND: dict[str, object] = {}


def _backend_cpu() -> float:
    """CPU seconds of this process's PostgreSQL backend (same machine), from its schedstat
    (nanoseconds; /proc/<pid>/stat counts in clock ticks of 10 ms). The backend's pid is asked
    once per connection: a statement per reading would add its own backend CPU to every
    request's figure."""
    from django.db import connection

    connection.ensure_connection()
    if _BACKEND.get("conn") is not connection.connection:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            _BACKEND.update(conn=connection.connection, pid=cur.fetchone()[0])
    return int(Path(f"/proc/{_BACKEND['pid']}/schedstat").read_text().split()[0]) / 1e9


_PID = re.compile(rb'data-assignment="([0-9a-f-]{36})"')
# The rating as htmx posts it: a urlencoded form (the test client would default to multipart,
# whose parser costs the app more than a browser's request does).
_RATING = urlencode({"choice": "left", "active_ms": "4000"})
_HTMX_FORM = {
    "content_type": "application/x-www-form-urlencoded",
    "headers": {"HX-Request": "true"},
}


def _enter(study_pid: str, i: int):
    from django.test import Client

    client = Client()
    q = {"PROLIFIC_PID": f"cpu-{i}", "STUDY_ID": "bench", "SESSION_ID": f"s{i}"}
    client.get(f"/s/{study_pid}/crowd/", q)
    r = client.post(f"/s/{study_pid}/crowd/", {"consent": "yes"})
    if r.status_code != 302:
        raise SystemExit(f"entry answered {r.status_code}")
    return client, r["Location"]


class Tally:
    def __init__(self) -> None:
        self.app = self.db = 0.0
        self.n = self.queries = 0

    def line(self, kind: str) -> str:
        n = max(1, self.n)
        return (
            f"{kind:6s} {self.n:6d} requests  app {1000 * self.app / n:6.2f} ms  "
            f"db {1000 * self.db / n:6.2f} ms  {self.queries / n:5.1f} SQL statements"
        )


def _timed(tally: Tally, fn):
    from django.db import connection

    def count(execute, sql, params, many, context):
        tally.queries += 1
        return execute(sql, params, many, context)

    # A cheap wrapper, not the debug cursor (which formats every statement and would add CPU).
    db0, app0 = _backend_cpu(), time.process_time()
    with connection.execute_wrapper(count):
        response = fn()
    app1 = time.process_time()
    tally.db += _backend_cpu() - db0
    tally.app += app1 - app0
    tally.n += 1
    return response


def _profiled(profiler, on: bool, fn):
    if profiler is None or not on:
        return fn()
    profiler.enable()
    try:
        return fn()
    finally:
        profiler.disable()


def _round(clients: list, get: Tally, post: Tally, profiler, kind: str = "POST") -> None:
    for k, (client, url) in enumerate(clients):
        if url is None:
            continue
        page = _profiled(
            profiler, kind == "GET", lambda c=client, u=url: _timed(get, lambda: c.get(u))
        )
        if page.status_code != 200:
            raise SystemExit(f"GET {url} answered {page.status_code}")
        r = _profiled(
            profiler,
            kind == "POST",
            lambda c=client, u=url: _timed(post, lambda: c.post(u, _RATING, **_HTMX_FORM)),
        )
        if r.status_code != 200:
            raise SystemExit(f"POST {url} answered {r.status_code}")
        m = _PID.search(r.content)
        clients[k] = (client, f"/a/{m.group(1).decode()}/" if m else None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--annotators", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--assignments", type=int, default=30_000)
    ap.add_argument("--fresh-items", type=int, default=3_000)
    ap.add_argument("--db-base", default="postgres://postgres@127.0.0.1:5432")
    ap.add_argument("--db-name", default="bench_cpu")
    ap.add_argument("--reuse-db", action="store_true", help="reset the database of an earlier run")
    ap.add_argument("--profile", help="write a cProfile of the POSTs (or GETs) to this file")
    ap.add_argument("--profile-kind", choices=["POST", "GET"], default="POST")
    args = ap.parse_args()
    args.n, args.assignment_mode = 3, "uniform"
    db_url, info = prepare_database(args)
    _configure(db_url)
    clients = [_enter(info["study_pid"], i) for i in range(args.annotators)]
    get, post = Tally(), Tally()
    _round(clients, Tally(), Tally(), None)  # warm up: prepared statements, template caches
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile(time.process_time)
    for _ in range(args.rounds):
        _round(clients, get, post, profiler, args.profile_kind)
    print(get.line("GET"))
    print(post.line("POST"))
    both = (get.app + get.db + post.app + post.db) / max(1, post.n)
    print(f"per item (GET + POST, app + db): {1000 * both:.2f} ms CPU")
    if profiler is not None:
        profiler.dump_stats(args.profile)
        log(f"profile: {args.profile}")


if __name__ == "__main__":
    main()
