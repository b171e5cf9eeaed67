"""Judge runner throughput and crash safety against a local OpenAI-compatible server.

    .venv/bin/python benchmarks/judge_throughput.py [--calls 2000] [--concurrency 8 64]
                                                    [--latency 0.2 2] [--database-url URL]
                                                    [--no-crash]

1. Starts the fake server (evaluation.testing.fake_openai) as its own process with a fixed
   latency, and a throwaway SQLite database (or --database-url, e.g. a scratch PostgreSQL DB).
2. Runs `manage.py judge` over a study of --calls star items (repeats off, so one call per item)
   at each --latency and --concurrency, and prints the throughput next to the bound
   concurrency / latency, the CPU per call of the judge process and of the server, and the
   duplicate paid calls the server saw.
3. Runs a second study, kills the judge process with SIGKILL about halfway (at a random moment,
   requests in flight), resumes it with `manage.py judge --resume`, and prints whether it
   completed, the calls recorded, and the duplicates.
Target: throughput at least 95% of the bound at 8 and at 64 concurrent, zero duplicates.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "BENCH_JUDGE_KEY"


def http(url: str, method: str = "GET", body: dict | None = None) -> dict:
    data = json.dumps(body or {}).encode() if method == "POST" else None
    req = urllib.request.Request(url, method=method, data=data)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


class Db:
    """Read-only peeks at the run tables (sqlite3 or psycopg), so the script needs no Django."""

    def __init__(self, url: str) -> None:
        self.url = url

    def one(self, sql: str):
        if self.url.startswith("sqlite"):
            with sqlite3.connect(self.url.split("sqlite:///", 1)[1], timeout=20) as con:
                return con.execute(sql).fetchone()
        import psycopg

        with psycopg.connect(self.url.replace("postgres://", "postgresql://")) as con:
            return con.execute(sql).fetchone()


def scenario(
    env: dict, base_url: str, n: int, concurrency: int, migrate: bool, key_env: str = KEY_ENV
) -> dict:
    """A throwaway study of n star items and a judge at this concurrency (also used by
    tests/evaluation/test_crash_resume.py): {"study": id, "judge": id, "items": n}."""
    cmd = [sys.executable, "-m", "evaluation.testing.scenario", "--items", str(n)]
    cmd += ["--base-url", base_url, "--concurrency", str(concurrency), "--key-env", key_env]
    if migrate:
        cmd.append("--migrate")
    out = subprocess.run(
        cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def resume(env: dict, run_id: int) -> subprocess.CompletedProcess:
    """`manage.py judge --resume RUN_ID` to its end, output captured."""
    return subprocess.run(
        [sys.executable, "manage.py", "judge", "--resume", str(run_id), "--no-progress"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def judge_cmd(ids: dict, repeat_rate: str = "0") -> list[str]:
    """`manage.py judge` of the scenario's study by its judge, no progress bar."""
    return [
        sys.executable,
        "manage.py",
        "judge",
        "--study",
        str(ids["study"]),
        "--judge",
        str(ids["judge"]),
        "--repeat-rate",
        repeat_rate,
        "--no-progress",
    ]


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc), 0 elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def parse_ts(value) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def _start_then_kill(db: Db, env: dict, base: str, ids: dict, calls: int, gate: bool) -> dict:
    """Start a run and SIGKILL it once half the calls are recorded (see kill_and_resume)."""
    http(base + "/_fake/reset", "POST")
    proc = subprocess.Popen(
        judge_cmd(ids), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    recorded = (
        "SELECT count(*) FROM evaluation_judgecall c JOIN evaluation_judgerun r "
        f"ON r.id = c.run_id WHERE r.study_id = {ids['study']}"
    )
    while True:
        try:
            if db.one(recorded)[0] >= calls // 2:
                break
        except Exception:
            pass
        time.sleep(0.01)
    if gate:
        http(base + "/_fake/pause", "POST")
        deadline = time.monotonic() + 30
        while db.one(recorded)[0] < http(base + "/_fake/stats")["paid"]:
            if time.monotonic() > deadline:
                break
            time.sleep(0.02)
    in_flight = http(base + "/_fake/stats")["in_flight"]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    http(base + "/_fake/resume", "POST")
    run_id = db.one(f"SELECT id FROM evaluation_judgerun WHERE study_id={ids['study']}")[0]
    return {
        "run_id": run_id,
        "at_kill": db.one(recorded)[0],
        "in_flight": in_flight,
        "left": db.one(f"SELECT status FROM evaluation_judgerun WHERE id={run_id}")[0],
    }


def kill_and_resume(db: Db, env: dict, base: str, ids: dict, calls: int, *, gate: bool) -> dict:
    """Start a run, SIGKILL it once half the calls are recorded, resume it, report.

    gate=True: the server first holds its answers (requests stay in flight) and the kill comes
    once every answer already delivered is on disk, i.e. a crash with calls in flight.
    gate=False: the kill comes at whatever instant the count is reached; answers the server had
    sent but the process had not yet read from its socket die with it and are asked again."""
    killed = _start_then_kill(db, env, base, ids, calls, gate)
    run_id = killed["run_id"]
    resumed = resume(env, run_id)
    final = db.one(
        "SELECT status, n_planned, n_done, n_ok, n_call_failed FROM "
        f"evaluation_judgerun WHERE id={run_id}"
    )
    dup_rows = db.one(
        "SELECT count(*) FROM (SELECT item_id, purpose FROM evaluation_judgecall "
        f"WHERE run_id={run_id} GROUP BY item_id, purpose HAVING count(*) > 1) x"
    )[0]
    st = http(base + "/_fake/stats")
    label = "after delivered answers were on disk" if gate else "at a random instant"
    print(
        f"\n2{'a' if gate else 'b'}) kill -9 {label}: {killed['at_kill']}/{calls} calls "
        f"recorded, {killed['in_flight']} requests in flight, run left '{killed['left']}'"
    )
    print(f"   resume exit code {resumed.returncode}: {resumed.stdout.strip()}")
    print(
        f"   final: status {final[0]}, {final[2]}/{final[1]} calls recorded, {final[3]} "
        f"parsed, {final[4]} failed; duplicate (item, purpose) rows {dup_rows}"
    )
    print(
        f"   server: {st['paid']} paid, {st['aborted']} aborted by the kill, duplicate paid "
        f"calls: {st['duplicates']}"
    )
    ok = final[0] == "done" and final[2] == final[1] and dup_rows == 0
    return {"ok": ok, "duplicates": st["duplicates"]}


def throughput(
    db: Db, env: dict, base: str, server_pid: int, args, concurrency: int, latency: float
) -> dict:
    """One full run at this concurrency and latency; prints and returns its share of the bound
    and the CPU per call."""
    ids = scenario(env, base + "/v1", args.calls, concurrency, migrate=False)
    http(base + "/_fake/reset", "POST")
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu0 = proc_cpu(server_pid)
    t0 = time.monotonic()
    subprocess.run(judge_cmd(ids), cwd=ROOT, env=env, check=True, capture_output=True)
    wall = time.monotonic() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    server_cpu = proc_cpu(server_pid) - server_cpu0
    run = db.one(
        "SELECT id, status, n_done, n_ok, started_at, finished_at, tokens_in, "
        f"tokens_out, cost FROM evaluation_judgerun WHERE study_id={ids['study']}"
    )
    st = http(base + "/_fake/stats")
    started, finished = parse_ts(run[4]), parse_ts(run[5])
    elapsed = (finished - started).total_seconds()
    window = st["last_paid_t"] - st["first_request_t"]
    bound = concurrency / latency
    tput = st["paid"] / elapsed
    paid = max(1, st["paid"])
    print(f"\n1) {st['paid']} calls, concurrency {concurrency}, latency {latency * 1000:.0f} ms")
    print(f"   run (claim to finish, incl. planning and writes): {elapsed:.2f} s -> {tput:.1f}/s")
    print(f"   server window (first request to last answer): {window:.2f} s")
    print(
        f"   before the first request {st['first_request_t'] - started.timestamp():.3f} s; "
        f"after the last answer {finished.timestamp() - st['last_paid_t']:.3f} s"
    )
    print(
        f"   bound concurrency/latency = {bound:.0f} calls/s; run throughput is "
        f"{100 * tput / bound:.1f}% of it (target >= 95%)"
    )
    print(
        f"   command wall time incl. Django start-up: {wall:.2f} s; max in flight "
        f"{st['max_in_flight']}; judge process CPU {1000 * client_cpu / paid:.2f} ms per call, "
        f"fake server {1000 * server_cpu / paid:.2f} ms per call"
    )
    print(
        f"   duplicate paid calls: {st['duplicates']}; status {run[1]}, {run[2]} done, "
        f"{run[3]} parsed; 429s {st['statuses'].get('429', 0)}"
    )
    return {
        "ratio": tput / bound,
        "duplicates": st["duplicates"],
        "cpu_ms": 1000 * client_cpu / paid,
        "server_ms": 1000 * server_cpu / paid,
    }


def machine_load() -> str:
    """Load average and the share of CPU time stolen by the hypervisor over one second."""

    def steal() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        return fields[7] if len(fields) > 7 else 0, sum(fields)

    try:
        s0, t0 = steal()
        time.sleep(1)
        s1, t1 = steal()
        stolen = f", steal {100 * (s1 - s0) / max(1, t1 - t0):.1f}%"
    except OSError:
        stolen = ""
    load = os.getloadavg()
    return (
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs{stolen}"
    )


def bench_env(db_url: str, tmp: Path) -> dict:
    return {
        **os.environ,
        "DATABASE_URL": db_url,
        KEY_ENV: "sk-bench",
        # The operator's judge rules: the benchmark's key variable and the local server allowed.
        "JUDGE_API_KEY_ENVS": KEY_ENV,
        "JUDGE_ALLOWED_HOSTS": "127.0.0.1",
        "JUDGE_JOURNAL_DIR": str(tmp / "journal"),
        "JUDGE_BACKOFF_BASE": "0.2",
        # As a production worker runs: DEBUG on would log and format every SQL statement.
        "DEBUG": "false",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "benchmark-only-not-secret",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }


def crash_tests(db: Db, env: dict, base: str, calls: int) -> bool:
    ids2 = scenario(env, base + "/v1", calls, 64, migrate=False)
    gated = kill_and_resume(db, env, base, ids2, calls, gate=True)
    ids3 = scenario(env, base + "/v1", calls, 64, migrate=False)
    instant = kill_and_resume(db, env, base, ids3, calls, gate=False)
    print(
        f"\nkill -9 halfway + resume: "
        f"{'completed, no duplicates' if gated['ok'] and not gated['duplicates'] else 'FAILED'}"
        f"; kill at a random instant: {'completed' if instant['ok'] else 'FAILED'}, "
        f"{instant['duplicates']} re-asked answer(s) that were in the dead process's socket "
        "buffers"
    )
    return gated["ok"] and not gated["duplicates"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 64], help="one run per value")
    ap.add_argument(
        "--latency", type=float, nargs="+", default=[0.2], help="seconds; one series per value"
    )
    ap.add_argument("--database-url", default="")
    ap.add_argument("--no-crash", action="store_true", help="skip the kill -9 and resume part")
    ap.add_argument("--keep", action="store_true", help="keep the throwaway database directory")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="judge-bench-"))
    db_url = args.database_url or f"sqlite:///{tmp / 'bench.sqlite3'}"
    env = bench_env(db_url, tmp)
    db = Db(db_url)
    server = subprocess.Popen(
        [sys.executable, "-m", "evaluation.testing.fake_openai"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None  # stdout=PIPE
    try:
        port = int(server.stdout.readline().split()[1])
        base = f"http://127.0.0.1:{port}"
        print(f"fake server on {base}, database {db_url}")
        print(f"machine before: {machine_load()}")
        scenario(env, base + "/v1", 1, 1, migrate=True)
        results = {}
        for latency in args.latency:
            http(base + "/_fake/config", "POST", {"latency": latency})
            for c in args.concurrency:
                results[latency, c] = throughput(db, env, base, server.pid, args, c, latency)
        http(base + "/_fake/config", "POST", {"latency": args.latency[0]})
        crash_ok = True if args.no_crash else crash_tests(db, env, base, args.calls)
        print(f"machine after: {machine_load()}")
        print()
        for (latency, c), r in results.items():
            print(
                f"result: latency {latency * 1000:.0f} ms, concurrency {c}: {100 * r['ratio']:.1f}% "
                f"of the bound; CPU per call {r['cpu_ms']:.2f} ms judge process, "
                f"{r['server_ms']:.2f} ms fake server; duplicate paid calls {r['duplicates']}"
            )
        print(f"result: crash and resume {'ok' if crash_ok else 'FAILED'}")
    finally:
        server.terminate()
        server.wait(timeout=10)
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
