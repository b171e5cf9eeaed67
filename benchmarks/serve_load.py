"""Serving benchmark: next item + submit under many concurrent annotators on PostgreSQL.

What it does
1. Creates a throwaway PostgreSQL database (default `bench_serve`), migrates it and loads, with
   COPY, a large pairwise study whose history already holds --assignments submitted assignments
   (default 1,000,000, with their ratings) on items that are complete, plus --fresh-items items
   that still need their N ratings.
2. Starts a real server as production runs it (from this interpreter's environment:
   `sys.executable -m gunicorn`, never a gunicorn found on PATH): gunicorn (gthread workers, --preload) on
   127.0.0.1, DEBUG off, persistent database connections, the Redis cache (and sessions) when
   Redis answers at REDIS_URL (default redis://127.0.0.1:6379/15).
3. Runs --annotators simulated crowd workers (threads spread over --client-procs processes, one
   cookie jar / session each) who arrive
   within --arrival seconds through the Prolific entry URL, which answers with their first item,
   and then loop: GET the item page, think, POST the rating (the POST records it and reserves
   the next item, answering with a redirect to it; with --htmx the answer is the next item's
   fragment, as in a browser with JavaScript). A few skip. --abuse-rate of them (default 10%)
   misbehave: double submits, abandoned items, hostile input (benchmarks/serve_clients.py).
4. Prints p50/p95/p99 latency per request kind, overall and per 10-s window, requests per
   second, the CPU share the hypervisor took during the run (steal; it shows up as latency), and the
   integrity counts (over-assigned items, under-assigned items of the fresh subset once every
   annotator has been told there is nothing left, lost submissions, counter mismatches, server
   errors (5xx) from any client) which must all be 0, and what the misbehaving clients got.

Usage: .venv/bin/python benchmarks/serve_load.py [--annotators 200] [--duration 120]
       [--assignments 1000000] [--fresh-items 1000] [--think 5.0] [--workers 4] [--keep-db]
       [--arrival 20] [--htmx] [--reuse-db] [--abuse-rate 0.1]  (--reuse-db: a database kept by --keep-db,
       reset to its loaded state instead of loading it again)
       --ramp [--quick] [--levels 600,800,1000] [--max-annotators 2000] [--step-seconds 40]:
       capacity, measured: see benchmarks/serve_ramp.py
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from serve_clients import run_group
from serve_data import (
    ROOT,
    cpu_times,
    drop_database,
    integrity,
    log,
    pct,
    prepare_database,
    server_env,
)

# -- Server --------------------------------------------------------------------------------------


def start_server(
    db_url: str, port: int, workers: int, threads: int, access_log: Path
) -> subprocess.Popen:
    env = server_env(db_url)
    # The gunicorn of the interpreter running this script (its virtualenv), not whatever PATH
    # finds first.
    cmd = [
        sys.executable, "-m", "gunicorn",
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
    # As the README's production set-up: hashed static files collected before the server starts
    # (WhiteNoise serves them; without the manifest every page fails with DEBUG off).
    env["STATIC_ROOT"] = f"{access_log}.static"
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env,
        check=True,
    )  # fmt: skip
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


# -- Main ----------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
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
        "--assignment-mode",
        choices=["uniform", "adaptive"],
        default="uniform",
        help="the study's assignment mode; adaptive picks by item priority (refreshed by a task "
        "worker, which this benchmark does not start: it measures the serving path)",
    )
    ap.add_argument(
        "--abuse-rate",
        type=float,
        default=0.10,
        help="share of clients that misbehave (double submits, abandons, hostile input), spread "
        "evenly over the three; 0 for a well-behaved crowd",
    )
    ap.add_argument(
        "--arrival",
        type=float,
        default=20.0,
        help="seconds over which the annotators arrive, uniformly: 20 s is 10 new crowd workers "
        "a second; --arrival 5 puts all 200 entries into 5 s (with --ramp: over the first "
        "ARRIVAL seconds of each step; default there 10)",
    )
    _add_ramp_args(ap)
    _add_server_args(ap)
    args = ap.parse_args()
    _ramp_defaults(ap, args)
    if not 0 <= args.abuse_rate <= 1:
        ap.error("--abuse-rate is a share from 0 to 1")
    return args


def _add_ramp_args(ap: argparse.ArgumentParser) -> None:
    ramp = ap.add_argument_group("ramp mode (serve_ramp.py)")
    ramp.add_argument(
        "--ramp",
        action="store_true",
        help="raise the number of annotators in steps (200, 400, ... up to --max-annotators) "
        "until p95 passes 50 ms or an error appears; print the largest number that held",
    )
    ramp.add_argument("--max-annotators", type=int, default=2000)
    ramp.add_argument("--levels", default="", help="explicit levels, e.g. 600,800,1000")
    ramp.add_argument("--step-seconds", type=float, default=40.0, help="length of a step")
    ramp.add_argument(
        "--quick", action="store_true", help="steps of 400 annotators, 25 s each (about 2 min)"
    )


def _add_server_args(ap: argparse.ArgumentParser) -> None:
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


def _ramp_defaults(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.ramp:
        # Enough fresh items that a full ramp never runs out of work; fewer clients processes:
        # asyncio carries hundreds of annotators per process.
        defaults = {"fresh_items": 40_000, "client_procs": 2, "arrival": 10.0}
        for key, value in defaults.items():
            if f"--{key.replace('_', '-')}" not in sys.argv:
                setattr(args, key, value)
        if args.quick and "--step-seconds" not in sys.argv:
            args.step_seconds = 25.0
        if args.arrival >= args.step_seconds:
            ap.error("--arrival must be shorter than --step-seconds")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_clients(args, db_url: str, info: dict) -> dict:
    """Start the client processes, watch for the study to complete, collect what they measured."""
    # The simulated annotators run in --client-procs processes (threads within each), like
    # browsers on separate machines: one Python process with 200 threads would add its own GIL
    # waits to every measured latency.
    ctx = multiprocessing.get_context("fork")
    complete = ctx.Event()
    results = ctx.Queue()
    t0 = time.time()
    cpu_before = cpu_times()
    stop_at = t0 + args.duration
    common = (
        f"http://127.0.0.1:{args.port}", info["study_pid"], stop_at, args.think,
        args.skip_rate, complete, args.htmx, args.arrival,
    )  # fmt: skip
    indices = list(range(args.annotators))
    procs = [
        ctx.Process(
            target=run_group,
            args=(indices[k :: args.client_procs], common, args.abuse_rate, results),
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
            row = conn.execute(
                "SELECT count(*) FROM annotation_item WHERE study_id = %s AND n_ratings < %s",
                [info["study"], args.n],
            ).fetchone()
            assert row is not None  # an aggregate always returns one row
            open_items = row[0]
            if open_items == 0:
                complete.set()
                break
            time.sleep(1.0)
    bots = [b for _ in procs for b in results.get(timeout=max(1.0, stop_at - time.time() + 90))]
    for p in procs:
        p.join(timeout=10)
    return {"bots": bots, "t0": t0, "elapsed": time.time() - t0, "cpu": (cpu_before, cpu_times()),
            "complete": complete.is_set()}  # fmt: skip


def read_server_times(access_log: Path) -> list[float]:
    server_ms: list[float] = []
    if access_log.exists():
        for line in access_log.read_text().splitlines()[1:]:  # the first is the start-up probe
            parts = line.split()
            if parts and parts[0].isdigit():
                server_ms.append(int(parts[0]) / 1000)
        access_log.unlink()
    return server_ms


def merge(bots: list[dict]) -> dict:
    lat: dict[str, list[float]] = {}
    for b in bots:
        for k, v in b["lat"].items():
            lat.setdefault(k, []).extend(v)
    bad_answers: dict[int, int] = {}
    for b in bots:
        for status, count in b["bad_answers"].items():
            bad_answers[status] = bad_answers.get(status, 0) + count
    behaviours: dict[str, int] = {}
    for b in bots:
        behaviours[b["behaviour"]] = behaviours.get(b["behaviour"], 0) + 1
    return {
        "lat": lat,
        # A double submit acknowledges the same assignment twice; it is one rating.
        "acked": sorted({pid for b in bots for pid in b["acked"]}),
        "errors": [e for b in bots for e in b["errors"]],
        "server_errors": [e for b in bots for e in b["server_errors"]],
        "finished": sum(b["finished"] for b in bots),
        "timeline": sorted(x for b in bots for x in b["timeline"]),
        "bad_answers": bad_answers,
        "behaviours": behaviours,
        "double_same": sum(b["double_same"] for b in bots),
        "double_diff": sum(b["double_diff"] for b in bots),
        "abandoned": sum(b["abandoned"] for b in bots),
    }


def print_latency(args, run: dict, m: dict, server_ms: list[float], served: tuple) -> list[float]:
    elapsed, t0 = run["elapsed"], run["t0"]
    every = [x for v in m["lat"].values() for x in v]
    served_new, repeats_new = served
    print()
    print("== serve_load results ==")
    print(
        f"server: gunicorn {args.workers} workers x {args.threads} threads (gthread), "
        f"PostgreSQL, {os.cpu_count()} CPUs"
    )
    print(
        f"annotators: {args.annotators} (arriving within {args.arrival:.0f} s, "
        f"think {args.think:.2f} s mean, "
        f"{'htmx' if args.htmx else 'plain forms'}), elapsed {elapsed:.1f} s, "
        f"{m['finished']} saw the end page"
    )
    mix = ", ".join(f"{k} {v}" for k, v in sorted(m["behaviours"].items()))
    print(f"client mix (--abuse-rate {args.abuse_rate:.2f}): {mix}")
    print(f"requests: {len(every):,}, {len(every) / elapsed:.1f} req/s; submissions acknowledged: "
          f"{len(m['acked']):,}; served {served_new:,} ({repeats_new} hidden repeats, "
          f"{100 * repeats_new / max(served_new, 1):.1f}%)")  # fmt: skip
    print(f"{'kind':8} {'count':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for kind, values in (*m["lat"].items(), ("all", every)):
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
        part = [d for start, d in m["timeline"] if lo <= start < lo + window]
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
    cpu_before, cpu_after = run["cpu"]
    if cpu_before and cpu_after:
        d = [b - a for a, b in zip(cpu_before, cpu_after, strict=True)]
        total = sum(d) or 1
        print(
            f"machine during the run: busy {100 * (total - d[3] - d[4] - d[7]) / total:.0f}%, "
            f"idle {100 * (d[3] + d[4]) / total:.0f}%, stolen by the hypervisor "
            f"{100 * d[7] / total:.1f}% (latency spikes when it is more than a few %)"
        )
    return every


def print_integrity(args, run: dict, m: dict, ok: dict) -> None:
    print(f"open reservations at the stop: {ok['open_before']} (expired and returned afterwards)")
    print(f"over-assigned items: {ok['over']}")
    if run["complete"]:
        print(f"under-assigned items: {ok['below']} (the study was completed during the run)")
    else:
        print(
            f"under-assigned items: n/a, study not complete in {args.duration:.0f} s "
            f"({ok['below']:,} items below N still open for annotators); raise --duration"
        )
    print(f"lost submissions: {ok['lost']}")
    print(f"counter mismatches (n_ratings / n_reserved vs rows): {ok['mismatched']}")
    print(f"server errors (5xx): {len(m['server_errors'])}" + (
        f", e.g. {m['server_errors'][:3]}" if m["server_errors"] else ""))  # fmt: skip
    answers = ", ".join(f"{s}: {c}" for s, c in sorted(m["bad_answers"].items())) or "none sent"
    print(f"hostile posts answered (status: count): {answers}")
    print(
        f"double submits: {m['double_same']} answered alike, {m['double_diff']} answered "
        f"differently; items walked away from: {m['abandoned']}"
    )
    if m["errors"]:
        print(f"client errors: {len(m['errors'])}, e.g. {m['errors'][:3]}")


def main_ramp(args, db_url: str, info: dict, server) -> bool:
    from serve_ramp import print_ramp_summary, run_ramp

    print(f"== serve_load --ramp: gunicorn {args.workers} workers x {args.threads} threads, "
          f"{os.cpu_count()} CPUs, think {args.think:.1f} s, "
          f"{'htmx' if args.htmx else 'plain forms'}, steps of {args.step_seconds:.0f} s "
          f"(figures after the first {args.arrival:.0f} s of arrivals) ==", flush=True)  # fmt: skip
    try:
        ramp = run_ramp(args, info, server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    acked = sorted({pid for t in ramp["tallies"] for _, pid in t.acked})
    ok = integrity(db_url, info["study"], args.n, acked)
    return print_ramp_summary(args, ramp, ok)


def main() -> None:
    args = parse_args()
    db_url, info = prepare_database(args)
    args.port = args.port or free_port()
    access_log = Path(f"/tmp/serve_load_access_{os.getpid()}.log")
    server = start_server(db_url, args.port, args.workers, args.threads, access_log)
    log(f"server up (gunicorn, {args.workers} workers x {args.threads} threads)")
    if args.ramp:
        clean = main_ramp(args, db_url, info, server)
        if not (args.keep_db or args.reuse_db):
            drop_database(args)
        sys.exit(0 if clean else 1)
    try:
        run = run_clients(args, db_url, info)
    finally:
        server.terminate()
        server.wait(timeout=30)
    m = merge(run["bots"])
    server_ms = read_server_times(access_log)
    ok = integrity(db_url, info["study"], args.n, m["acked"])
    print(
        f"history: {args.assignments:,} assignments on {info['full_items']:,} complete items; "
        f"fresh items: {info['fresh_items']:,}; N = {args.n}"
    )
    every = print_latency(args, run, m, server_ms, ok["served"])
    print_integrity(args, run, m, ok)
    p95 = 1000 * pct(every, 95)
    print(f"p95 {'<' if p95 < 50 else '>='} 50 ms target: {p95:.1f} ms")
    if not (args.keep_db or args.reuse_db):
        drop_database(args)
    clean = ok["over"] == 0 and ok["lost"] == 0 and ok["mismatched"] == 0
    clean = clean and not m["server_errors"] and (ok["below"] == 0 or not run["complete"])
    sys.exit(0 if clean and not m["errors"] else 1)


if __name__ == "__main__":
    main()
