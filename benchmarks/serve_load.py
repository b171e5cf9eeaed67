"""Serving benchmark: next item + submit under many concurrent annotators on PostgreSQL.

What it does
1. Creates a throwaway PostgreSQL database (default `bench_serve`), migrates it and loads, with
   COPY, a large pairwise study whose history already holds --assignments submitted assignments
   (default 1,000,000, with their ratings) on items that are complete, plus --fresh-items items
   that still need their N ratings.
2. Starts a real server as production runs it: gunicorn (gthread workers, --preload) on
   127.0.0.1, DEBUG off, persistent database connections, the Redis cache (and sessions) when
   Redis answers at REDIS_URL (default redis://127.0.0.1:6379/15).
3. Runs --annotators simulated crowd workers (threads spread over --client-procs processes, one
   cookie jar / session each) who arrive
   within --ramp seconds through the Prolific entry URL, which answers with their first item,
   and then loop: GET the item page, think, POST the rating (the POST records it and reserves
   the next item, answering with a redirect to it; with --htmx the answer is the next item's
   fragment, as in a browser with JavaScript). A few skip.
4. Prints p50/p95/p99 latency per request kind, overall and per 10-s window, requests per
   second, the CPU share the hypervisor took during the run (steal; it shows up as latency), and the
   integrity counts (over-assigned items, under-assigned items of the fresh subset once every
   annotator has been told there is nothing left, lost submissions, counter mismatches) which
   must all be 0.

Usage: .venv/bin/python benchmarks/serve_load.py [--annotators 200] [--duration 120]
       [--assignments 1000000] [--fresh-items 1000] [--think 5.0] [--workers 4] [--keep-db]
       [--ramp 20] [--htmx] [--reuse-db]  (--reuse-db: a database kept by --keep-db, reset to
       its loaded state instead of loading it again)
"""

from __future__ import annotations

import argparse
import http.cookiejar
import multiprocessing
import os
import random
import re
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
N_LLMS = 10
PAIRS_PER_QUESTION = N_LLMS * (N_LLMS - 1) // 2


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


# -- Database set-up -----------------------------------------------------------------------------


def recreate_database(base_url: str, name: str) -> str:
    import psycopg

    with psycopg.connect(base_url + "/postgres", autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name]
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base_url}/{name}"


def copy_rows(cur, table: str, columns: list[str], rows) -> int:
    n = 0
    with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as cp:
        for row in rows:
            cp.write_row(row)
            n += 1
    return n


def load_study(db_url: str, *, assignments: int, fresh_items: int, n: int) -> dict:
    """COPY a pairwise study: `assignments` historic submitted first exposures (with ratings) on
    complete items, plus `fresh_items` items with no ratings yet."""
    import psycopg

    full_items = -(-assignments // n)  # at least `assignments` stored
    total_items = full_items + fresh_items
    n_questions = -(-total_items // PAIRS_PER_QUESTION)
    historic_raters = max(n + 1, min(5000, full_items))
    rng = random.Random(42)
    t0 = time.perf_counter()
    with psycopg.connect(db_url) as conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
            "email, is_staff, is_active, date_joined) VALUES ('!', false, 'bench-owner', '', '', "
            "'', true, true, now()) RETURNING id"
        )
        owner = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO annotation_dataset (name, description, source, owner_id, created_at) "
            "VALUES ('bench', '', 'benchmark', %s, now()) RETURNING id",
            [owner],
        )
        dataset = cur.fetchone()[0]
        llm_ids = []
        for i in range(N_LLMS):
            cur.execute(
                "INSERT INTO annotation_llm (name, description) VALUES (%s, '') RETURNING id",
                [f"bench-model-{i}"],
            )
            llm_ids.append(cur.fetchone()[0])
        cur.execute("SELECT id FROM annotation_rubric WHERE key = 'pairwise'")
        rubric = cur.fetchone()[0]
        cur.execute(
            "INSERT INTO annotation_study (name, public_id, description, instructions, dataset_id,"
            " owner_id, mode, rubric_id, status, pair_design, pairs_per_question, selection, "
            "ratings_per_item, repeat_rate, hint_policy, reservation_timeout, admit_onsite, "
            "admit_crowd, admit_public, completion_code, completion_url, created_at) VALUES "
            "('bench study', %s, '', 'Pick the better answer.', %s, %s, 'pairwise', %s, 'live', "
            "'all', NULL, '{}', %s, 0.02, 'random', 180, false, true, false, 'BENCH-DONE', '', "
            "now()) RETURNING id",
            [uuid.uuid4().hex[:16], dataset, owner, rubric, n],
        )
        study = cur.fetchone()[0]
        cur.execute("SELECT public_id FROM annotation_study WHERE id = %s", [study])
        study_pid = cur.fetchone()[0]

        text = "An answer of moderate length. " * 20
        copy_rows(
            cur,
            "annotation_question",
            ["dataset_id", "external_id", "text", "task_type", "subcategory", "kind",
             "answer_type", "reference", "meta"],
            ((dataset, f"Q{q}", f"Benchmark question {q}?", "bench", "", "subjective", "",
              "A reference answer.", "{}") for q in range(n_questions)),
        )  # fmt: skip
        cur.execute(
            "SELECT id FROM annotation_question WHERE dataset_id = %s ORDER BY id", [dataset]
        )
        qids = [r[0] for r in cur.fetchall()]
        copy_rows(
            cur,
            "annotation_response",
            ["question_id", "llm_id", "external_id", "text", "length"],
            ((q, llm, "", text, len(text)) for q in qids for llm in llm_ids),
        )
        cur.execute(
            "SELECT question_id, id FROM annotation_response WHERE question_id = ANY(%s) "
            "ORDER BY question_id, id",
            [qids],
        )
        responses: dict[int, list[int]] = {}
        for q, r in cur.fetchall():
            responses.setdefault(q, []).append(r)

        def items():
            made = 0
            for q in qids:
                rs = responses[q]
                for i in range(len(rs)):
                    for j in range(i + 1, len(rs)):
                        if made >= total_items:
                            return
                        ratings = n if made < full_items else 0
                        yield (study, q, rs[i], rs[j], ratings, 0, rng.randrange(2**31 - 1))
                        made += 1

        copy_rows(
            cur,
            "annotation_item",
            ["study_id", "question_id", "response_a_id", "response_b_id", "n_ratings",
             "n_reserved", "shuffle"],
            items(),
        )  # fmt: skip
        log(f"  {total_items:,} items, {len(qids):,} questions ({time.perf_counter() - t0:.0f} s)")

        copy_rows(
            cur,
            "annotation_rater",
            ["kind", "pool", "name", "pseudonym", "platform", "external_id", "nickname", "meta",
             "created_at"],
            (("human", "crowd", "", uuid.uuid4().hex[:16], "prolific", f"hist-{i}", "", "{}",
              "2026-01-01T00:00:00Z") for i in range(historic_raters)),
        )  # fmt: skip
        cur.execute("SELECT id FROM annotation_rater WHERE external_id LIKE 'hist-%%' ORDER BY id")
        rater_ids = [r[0] for r in cur.fetchall()]
        cur.execute(
            "SELECT id FROM annotation_item WHERE study_id = %s AND n_ratings = %s ORDER BY id",
            [study, n],
        )
        full_ids = [r[0] for r in cur.fetchall()]
        seqs = [0] * len(rater_ids)
        plan: list[tuple[int, int, int]] = []  # (item, rater, seq)
        for k, item in enumerate(full_ids):
            for j in range(n):
                ri = (k * n + j) % len(rater_ids)
                seqs[ri] += 1
                plan.append((item, rater_ids[ri], seqs[ri]))
        # An item's n raters are consecutive indices modulo len(rater_ids) > n: all distinct.
        copy_rows(
            cur,
            "annotation_assignment",
            ["public_id", "study_id", "item_id", "rater_id", "seq", "status", "left_is_a",
             "hint_shown", "is_repeat", "served_at", "expires_at", "submitted_at", "active_ms"],
            ((uuid.uuid4(), study, item, rater, seq, "submitted", bool(seq % 2), False, False,
              "2026-01-01T00:00:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:00:20Z", 15000)
             for item, rater, seq in plan),
        )  # fmt: skip
        log(f"  {len(plan):,} assignments ({time.perf_counter() - t0:.0f} s)")
        cur.execute(
            "INSERT INTO annotation_rating (assignment_id, item_id, rater_id, choice, comment, "
            "created_at, updated_at) SELECT id, item_id, rater_id, "
            "(ARRAY['A','B','tie','both_bad'])[1 + (id %% 4)], '', submitted_at, submitted_at "
            "FROM annotation_assignment WHERE study_id = %s",
            [study],
        )
        log(f"  ratings ({time.perf_counter() - t0:.0f} s)")
        conn.commit()
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    log(f"  analysed ({time.perf_counter() - t0:.0f} s)")
    return {
        "study": study,
        "study_pid": study_pid,
        "full_items": full_items,
        "fresh_items": fresh_items,
    }


def reset_study(db_url: str, *, assignments: int, fresh_items: int, n: int) -> dict | None:
    """Put a database kept by an earlier run (--keep-db) back in its loaded state: drop what the
    simulated annotators wrote and reopen the fresh items. None if it does not hold a study of
    this size (then it is loaded afresh)."""
    import psycopg

    try:
        conn = psycopg.connect(db_url)
    except psycopg.OperationalError:
        return None
    with conn, conn.cursor() as cur:
        cur.execute("SELECT id, public_id FROM annotation_study WHERE name = 'bench study'")
        row = cur.fetchone()
        full_items = -(-assignments // n)
        if row is None:
            return None
        study, study_pid = row
        cur.execute("SELECT count(*) FROM annotation_item WHERE study_id = %s", [study])
        if cur.fetchone()[0] != full_items + fresh_items:
            return None
        new = "SELECT id FROM annotation_rater WHERE external_id NOT LIKE 'hist-%%'"
        cur.execute(
            f"DELETE FROM annotation_score WHERE rating_id IN (SELECT id FROM annotation_rating "
            f"WHERE rater_id IN ({new}))"
        )
        cur.execute(f"DELETE FROM annotation_rating WHERE rater_id IN ({new})")
        cur.execute(f"DELETE FROM annotation_assignment WHERE is_repeat AND rater_id IN ({new})")
        cur.execute(f"DELETE FROM annotation_assignment WHERE rater_id IN ({new})")
        cur.execute(new.replace("SELECT id", "DELETE"))
        cur.execute(
            "UPDATE annotation_item SET n_ratings = 0, n_reserved = 0 WHERE study_id = %s AND "
            "id > (SELECT max(item_id) FROM annotation_assignment WHERE study_id = %s)",
            [study, study],
        )
        cur.execute("DELETE FROM django_session")
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE annotation_item")
        conn.execute("VACUUM ANALYZE annotation_assignment")
    return {"study": study, "study_pid": study_pid, "full_items": full_items,
            "fresh_items": fresh_items}  # fmt: skip


# -- Server --------------------------------------------------------------------------------------


def redis_reachable(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def start_server(
    db_url: str, port: int, workers: int, threads: int, access_log: Path
) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "DEBUG": "false",
        "SECRET_KEY": "benchmark-only-" + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "DB_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "ERROR",
        # Every simulated worker comes from 127.0.0.1: no per-address cap on open items.
        "ANNOTATION_OPEN_PER_ADDRESS": "0",
    }
    # As in production: the shared Redis cache, which also serves the sessions (cached_db).
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")
    if redis_reachable(redis_url):
        env["REDIS_URL"] = redis_url
        log(f"cache and sessions: {redis_url}")
    else:
        env.pop("REDIS_URL", None)
        log("Redis is not reachable: per-process cache, database sessions")
    gunicorn = ROOT / ".venv" / "bin" / "gunicorn"
    cmd = [
        str(gunicorn) if gunicorn.exists() else "gunicorn",
        "config.wsgi:application",
        "--bind", f"127.0.0.1:{port}",
        "--workers", str(workers),
        "--worker-class", "gthread",
        "--threads", str(threads),
        "--backlog", "2048",
        "--preload",
        "--log-level", "warning",
        # Server-side time per request (microseconds), to tell queueing in the client apart.
        "--access-logfile", str(access_log),
        "--access-logformat", "%(D)s %(m)s %(U)s %(s)s",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).read()
            return proc
        except OSError:  # refused while booting, or a slow first answer
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the server did not start")


# -- Simulated annotators --------------------------------------------------------------------------


HTTPS_HANDLER = urllib.request.HTTPSHandler(context=ssl.create_default_context())


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Annotator(threading.Thread):
    UUID = re.compile(r"/a/([0-9a-f-]{36})/")

    def __init__(self, i, base, study_pid, stop_at, think, skip_rate, complete, htmx, ramp):
        super().__init__(daemon=True)
        self.htmx = htmx
        self.complete = complete
        self.i, self.base, self.study_pid = i, base, study_pid
        self.stop_at, self.think, self.skip_rate = stop_at, think, skip_rate
        self.ramp = ramp
        self.rng = random.Random(i)
        self.jar = http.cookiejar.CookieJar()
        # One TLS context for all: build_opener would otherwise load the CA store for each
        # annotator (about 40 ms of CPU each, 8 s for 200, on the cores the server runs on).
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), NoRedirect(), HTTPS_HANDLER
        )
        self.lat: dict[str, list[float]] = {"entry": [], "page": [], "submit": [], "skip": []}
        self.timeline: list[tuple[float, float]] = []  # (time.time() at the start, seconds)
        self.acked: list[str] = []
        self.errors: list[str] = []
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
        self.lat[kind].append(time.perf_counter() - t)
        self.timeline.append((time.time() - (time.perf_counter() - t), time.perf_counter() - t))
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

    def loop(self):
        time.sleep(self.rng.uniform(0, max(self.ramp, 0.1)))  # staggered arrival
        q = urllib.parse.urlencode(
            {"PROLIFIC_PID": f"bench-{self.i}", "STUDY_ID": "bench", "SESSION_ID": f"s{self.i}"}
        )
        status, location, _ = self.request("entry", f"/s/{self.study_pid}/crowd/?{q}")
        if status == 200:  # the instructions and the consent box; agreeing serves the first item
            status, location, _ = self.request(
                "entry", f"/s/{self.study_pid}/crowd/", {"consent": "yes"}
            )
        if status != 302:
            raise RuntimeError(f"entry {status}")
        # The consent answers with a redirect to the first item (or the end page).
        if self.htmx:
            self.loop_htmx(location)
            return
        while time.time() < self.stop_at:
            m = self.UUID.search(location)
            if not m:
                if "/done/" in location:
                    self.finished = True
                    # Like a crowd that keeps arriving: come back while the study still needs
                    # ratings (an item skipped or abandoned by someone else may be free again).
                    if not self.wait_for_work():
                        return
                    status, location, _ = self.request("entry", f"/s/{self.study_pid}/next/")
                    continue
                raise RuntimeError(f"unexpected redirect {status} {location!r}")
            pid = m.group(1)
            status, _, body = self.request("page", f"/a/{pid}/")
            if status != 200:
                raise RuntimeError(f"page {status}")
            self.pause()
            if self.rng.random() < self.skip_rate:
                status, location, _ = self.request("skip", f"/a/{pid}/skip/", {})
            else:
                choice = self.rng.choice(["left", "right", "tie", "both_bad"])
                status, location, _ = self.request(
                    "submit", f"/a/{pid}/", {"choice": choice, "active_ms": "12000"}
                )
                if status == 302:
                    self.acked.append(pid)
            if status != 302:
                raise RuntimeError(f"post {status}")

    def loop_htmx(self, location):
        """As a browser with JavaScript: the first item is a whole page, then each POST returns
        the next item's fragment."""
        if self.UUID.search(location):
            status, _, _ = self.request("page", location)
            if status != 200:
                raise RuntimeError(f"page {status}")
        while time.time() < self.stop_at:
            m = self.UUID.search(location)
            if not m:
                if "/done/" in location:
                    self.finished = True
                    if not self.wait_for_work():
                        return
                    status, location, _ = self.request(
                        "entry", f"/s/{self.study_pid}/next/", htmx=True
                    )
                    continue
                raise RuntimeError(f"unexpected answer {status} {location!r}")
            pid = m.group(1)
            self.pause()
            if self.rng.random() < self.skip_rate:
                status, location, _ = self.request("skip", f"/a/{pid}/skip/", {}, htmx=True)
            else:
                choice = self.rng.choice(["left", "right", "tie", "both_bad"])
                status, location, _ = self.request(
                    "submit", f"/a/{pid}/", {"choice": choice, "active_ms": "12000"}, htmx=True
                )
                if status in (200, 204):
                    self.acked.append(pid)
            if status not in (200, 204):
                raise RuntimeError(f"post {status}")


def cpu_times() -> list[int]:
    """The machine's CPU time counters (Linux /proc/stat: user nice system idle iowait irq
    softirq steal), or [] elsewhere."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return []


def run_group(indices: list[int], common: tuple, results) -> None:
    """One client process: its share of the annotators as threads; reports what they measured."""
    bots = [Annotator(i, *common) for i in indices]
    for b in bots:
        b.start()
    stop_at = common[2]
    for b in bots:
        b.join(timeout=max(0.1, stop_at - time.time() + 60))
    results.put(
        [
            {"lat": b.lat, "acked": b.acked, "errors": b.errors, "finished": b.finished,
             "timeline": b.timeline}
            for b in bots
        ]
    )  # fmt: skip


# -- Main ----------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--annotators", type=int, default=200)
    ap.add_argument("--duration", type=float, default=120, help="seconds, at most")
    ap.add_argument("--assignments", type=int, default=1_000_000)
    ap.add_argument("--fresh-items", type=int, default=1000)
    ap.add_argument("--n", type=int, default=3, help="ratings per item")
    ap.add_argument(
        "--think",
        type=float,
        default=5.0,
        help="mean seconds an annotator spends on an item (uniform 0.5x-1.5x); real annotators "
        "take 10-60 s, so 5 s is a dense load",
    )
    ap.add_argument("--skip-rate", type=float, default=0.02)
    ap.add_argument(
        "--ramp",
        type=float,
        default=20.0,
        help="seconds over which the annotators arrive, uniformly: 20 s is 10 new crowd workers "
        "a second; --ramp 5 puts all 200 entries into 5 s",
    )
    # 4 x 2 was the best of 3x8, 4x2, 2x6 and 6x2 on the 2-core machine (fewer threads per
    # process: less waiting on the GIL).
    ap.add_argument(
        "--client-procs",
        type=int,
        default=4,
        help="processes the simulated annotators are spread over (threads within each)",
    )
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--db-base", default="postgres://postgres@127.0.0.1:5432")
    ap.add_argument("--db-name", default="bench_serve")
    ap.add_argument("--keep-db", action="store_true", help="keep the database afterwards")
    ap.add_argument(
        "--reuse-db",
        action="store_true",
        help="reset a database kept by --keep-db instead of loading it again",
    )
    ap.add_argument(
        "--htmx",
        action="store_true",
        help="post as the page's JavaScript does: one request per item (submit + next fragment) "
        "instead of POST, redirect, GET",
    )
    args = ap.parse_args()

    size = {"assignments": args.assignments, "fresh_items": args.fresh_items, "n": args.n}
    db_url = f"{args.db_base}/{args.db_name}"
    info = reset_study(db_url, **size) if args.reuse_db else None
    if info is not None:
        log(f"reusing database {args.db_name}, reset to its loaded state")
    else:
        log(f"creating database {args.db_name}")
        db_url = recreate_database(args.db_base, args.db_name)
        env = {**os.environ, "DATABASE_URL": db_url}
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True
        )
        log(f"loading {args.assignments:,} assignments + {args.fresh_items:,} fresh items")
        info = load_study(db_url, **size)

    if not args.port:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            args.port = sock.getsockname()[1]
    access_log = Path(f"/tmp/serve_load_access_{os.getpid()}.log")
    server = start_server(db_url, args.port, args.workers, args.threads, access_log)
    log(f"server up (gunicorn, {args.workers} workers x {args.threads} threads)")
    # The simulated annotators run in --client-procs processes (threads within each), like
    # browsers on separate machines: one Python process with 200 threads would add its own GIL
    # waits to every measured latency.
    ctx = multiprocessing.get_context("fork")
    complete = ctx.Event()
    results = ctx.Queue()
    try:
        t0 = time.time()
        cpu_before = cpu_times()
        stop_at = t0 + args.duration
        common = (
            f"http://127.0.0.1:{args.port}", info["study_pid"], stop_at, args.think,
            args.skip_rate, complete, args.htmx, args.ramp,
        )  # fmt: skip
        procs = [
            ctx.Process(
                target=run_group,
                args=(list(range(args.annotators))[k :: args.client_procs], common, results),
                daemon=True,
            )
            for k in range(args.client_procs)
        ]
        for p in procs:
            p.start()
        # The study is complete when no item is below N; annotators stop asking then.
        import psycopg

        with psycopg.connect(db_url, autocommit=True) as conn:
            while any(p.is_alive() for p in procs) and time.time() < stop_at:
                open_items = conn.execute(
                    "SELECT count(*) FROM annotation_item WHERE study_id = %s AND n_ratings < %s",
                    [info["study"], args.n],
                ).fetchone()[0]
                if open_items == 0:
                    complete.set()
                    break
                time.sleep(1.0)
        bots = [b for _ in procs for b in results.get(timeout=max(1.0, stop_at - time.time() + 90))]
        for p in procs:
            p.join(timeout=10)
        elapsed = time.time() - t0
        cpu_after = cpu_times()
    finally:
        server.terminate()
        server.wait(timeout=30)

    lat: dict[str, list[float]] = {"entry": [], "page": [], "submit": [], "skip": []}
    acked: list[str] = []
    errors: list[str] = []
    for b in bots:
        for k, v in b["lat"].items():
            lat[k].extend(v)
        acked.extend(b["acked"])
        errors.extend(b["errors"])
    finished = sum(b["finished"] for b in bots)
    every = [x for v in lat.values() for x in v]
    timeline = sorted(x for b in bots for x in b["timeline"])
    server_ms: list[float] = []
    if access_log.exists():
        for line in access_log.read_text().splitlines()[1:]:  # the first is the start-up probe
            parts = line.split()
            if parts and parts[0].isdigit():
                server_ms.append(int(parts[0]) / 1000)
        access_log.unlink()

    # Integrity, straight from the database.
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connection

    from annotation.engine import assignments_expire
    from annotation.models import Study

    study = Study.objects.get(pk=info["study"])
    open_before = study.assignments.filter(status="served").count()
    # Reservations of annotators stopped mid-item lapse and return their items.
    assignments_expire(study=study, now=study.created_at.replace(year=2100))
    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM (SELECT i.id FROM annotation_item i "
            "LEFT JOIN annotation_rating r ON r.item_id = i.id "
            "LEFT JOIN annotation_assignment a ON a.id = r.assignment_id AND NOT a.is_repeat "
            "WHERE i.study_id = %s GROUP BY i.id "
            "HAVING count(a.id) > %s OR max(i.n_ratings) > %s) x",
            [study.pk, args.n, args.n],
        )
        over = cur.fetchone()[0]
        cur.execute(
            "SELECT count(*) FROM (SELECT i.id, max(i.n_ratings) AS n, count(a.id) AS c "
            "FROM annotation_item i LEFT JOIN annotation_rating r ON r.item_id = i.id "
            "LEFT JOIN annotation_assignment a ON a.id = r.assignment_id AND NOT a.is_repeat "
            "WHERE i.study_id = %s GROUP BY i.id HAVING max(i.n_ratings) <> count(a.id) "
            "OR max(i.n_reserved) <> 0) x",
            [study.pk],
        )
        mismatched = cur.fetchone()[0]
        cur.execute(
            "SELECT count(*) FROM annotation_item WHERE study_id = %s AND n_ratings < %s",
            [study.pk, args.n],
        )
        below = cur.fetchone()[0]
        cur.execute(
            "SELECT count(*) FROM annotation_assignment a JOIN annotation_rating r "
            "ON r.assignment_id = a.id WHERE a.public_id = ANY(%s::uuid[])",
            [acked],
        )
        stored = cur.fetchone()[0]
        cur.execute(
            "SELECT count(*), count(*) FILTER (WHERE a.is_repeat) FROM annotation_assignment a "
            "JOIN annotation_rater r ON r.id = a.rater_id "
            "WHERE a.study_id = %s AND r.external_id LIKE 'bench-%%'",
            [study.pk],
        )
        served_new, repeats_new = cur.fetchone()
    lost = len(acked) - stored

    print()
    print("== serve_load results ==")
    print(
        f"server: gunicorn {args.workers} workers x {args.threads} threads (gthread), "
        f"PostgreSQL, {os.cpu_count()} CPUs"
    )
    print(
        f"history: {args.assignments:,} assignments on {info['full_items']:,} complete items; "
        f"fresh items: {info['fresh_items']:,}; N = {args.n}"
    )
    print(
        f"annotators: {args.annotators} (arriving within {args.ramp:.0f} s, "
        f"think {args.think:.2f} s mean, "
        f"{'htmx' if args.htmx else 'plain forms'}), elapsed {elapsed:.1f} s, "
        f"{finished} saw the end page"
    )
    print(f"requests: {len(every):,}, {len(every) / elapsed:.1f} req/s; submissions acknowledged: "
          f"{len(acked):,}; served {served_new:,} ({repeats_new} hidden repeats, "
          f"{100 * repeats_new / max(served_new, 1):.1f}%)")  # fmt: skip
    print(f"{'kind':8} {'count':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for kind, values in (*lat.items(), ("all", every)):
        if values:
            print(
                f"{kind:8} {len(values):8d} {1000 * pct(values, 50):8.1f} "
                f"{1000 * pct(values, 95):8.1f} {1000 * pct(values, 99):8.1f} "
                f"{1000 * max(values):8.1f}"
            )
    window = 10.0
    print(f"over time ({window:.0f}-s windows by request start): requests, p50 / p95 ms")
    for k in range(int(elapsed // window) + 1):
        lo = t0 + k * window
        part = [d for start, d in timeline if lo <= start < lo + window]
        if part:
            print(
                f"  {k * window:4.0f}-{(k + 1) * window:<4.0f}s {len(part):6d} "
                f"{1000 * pct(part, 50):8.1f} {1000 * pct(part, 95):8.1f}"
            )
    if server_ms:
        print(
            f"server-side (gunicorn, request in to response out): p50 {pct(server_ms, 50):.1f} ms, "
            f"p95 {pct(server_ms, 95):.1f} ms, p99 {pct(server_ms, 99):.1f} ms"
        )
    if cpu_before and cpu_after:
        d = [b - a for a, b in zip(cpu_before, cpu_after, strict=True)]
        total = sum(d) or 1
        print(
            f"machine during the run: busy {100 * (total - d[3] - d[4] - d[7]) / total:.0f}%, "
            f"idle {100 * (d[3] + d[4]) / total:.0f}%, stolen by the hypervisor "
            f"{100 * d[7] / total:.1f}% (latency spikes when it is more than a few %)"
        )
    print(f"open reservations at the stop: {open_before} (expired and returned afterwards)")
    print(f"over-assigned items: {over}")
    if complete.is_set():
        print(f"under-assigned items: {below} (the study was completed during the run)")
    else:
        print(
            f"under-assigned items: n/a, study not complete in {args.duration:.0f} s "
            f"({below:,} items below N still open for annotators); raise --duration"
        )
    print(f"lost submissions: {lost}")
    print(f"counter mismatches (n_ratings / n_reserved vs rows): {mismatched}")
    if errors:
        print(f"client errors: {len(errors)}, e.g. {errors[:3]}")
    p95 = 1000 * pct(every, 95)
    print(f"p95 {'<' if p95 < 50 else '>='} 50 ms target: {p95:.1f} ms")

    if not (args.keep_db or args.reuse_db):
        from django.db import connections

        connections.close_all()
        import psycopg

        with psycopg.connect(args.db_base + "/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{args.db_name}" WITH (FORCE)')
    ok = over == 0 and lost == 0 and mismatched == 0 and (below == 0 or not complete.is_set())
    sys.exit(0 if ok and not errors else 1)


if __name__ == "__main__":
    main()
