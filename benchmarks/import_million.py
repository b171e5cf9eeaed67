"""Benchmark: import 1,000,000 pairwise ratings (generic CSV format) into a fresh PostgreSQL
database through `manage.py import_dataset`, as a user runs it.

    .venv/bin/python benchmarks/import_million.py [--ratings 1000000] [--pg postgres://postgres@127.0.0.1:5432]
        [--questions 2500] [--llms 10] [--db bench_million] [--keep] [--file PATH]

1. Writes a generic CSV (docs/import-formats.md): --questions questions, --llms answers to each,
   and --ratings `pairwise` rows spread over raters (each rater rates every pair at most once),
   with submission times, so Elo has an order.
2. Creates a throwaway database (--db, default bench_million), migrates it, and times
   `python manage.py import_dataset --format csv FILE --dataset bench-million --no-progress`
   in a child process (the user path: parse, validate, write with COPY on PostgreSQL).
3. Prints the seconds, ratings per second, the command's phases (parse, validate, write, commit:
   wall and CPU seconds), the CPU of the command and of its PostgreSQL backend, the counts read
   back from the database and the machine (CPUs, model, load average, CPU steal during the
   import). Target: under 30 s.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = ["type", "question_id", "text", "llm", "llm_a", "llm_b", "rater", "choice", "submitted_at"]
CHOICES = ("a", "b", "tie", "both_bad")


def write_file(path: Path, *, ratings: int, questions: int, llms: int) -> int:
    """The CSV: questions, responses, then pairwise ratings rater by rater. Returns the number of
    rating rows written."""
    names = [f"model-{k}" for k in range(llms)]
    pairs = [(q, i, j) for q in range(questions) for i in range(llms) for j in range(i + 1, llms)]
    raters = -(-ratings // len(pairs))
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    written = 0
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        for q in range(questions):
            w.writerow(["question", f"Q{q}", f"Question {q}: which answer is better?"])
        answer = "An answer of moderate length, the same for every model. " * 4
        for q in range(questions):
            for name in names:
                w.writerow(["response", f"Q{q}", f"{answer}{q}", name])
        for r in range(raters):
            for k, (q, i, j) in enumerate(pairs):
                if written >= ratings:
                    break
                when = (t0 + dt.timedelta(seconds=written)).isoformat()
                choice = CHOICES[(k * 7 + r) % 4]
                w.writerow(["pairwise", f"Q{q}", "", "", names[i], names[j], f"rater-{r}", choice,
                            when])  # fmt: skip
                written += 1
    return written


def cpu_ticks(pid: int | None = None) -> list[int]:
    """Clock ticks: of the whole machine (user, nice, system, idle, iowait, irq, softirq, steal
    from /proc/stat) or, given a pid, of that process ([user, system])."""
    try:
        if pid is None:
            first = Path("/proc/stat").read_text().split("\n", 1)[0]
            return [int(x) for x in first.split()[1:9]]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return [int(fields[11]), int(fields[12])]
    except (OSError, ValueError, IndexError):
        return []


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} CPUs, {model}, load average {load}, {time.strftime('%Y-%m-%d')}"


def counts(db_url: str) -> dict[str, int]:
    import psycopg

    tables = ("question", "response", "item", "rater", "assignment", "rating")
    queries = {table: f"SELECT count(*) FROM annotation_{table}" for table in tables}
    queries["items_rated"] = "SELECT coalesce(sum(n_ratings), 0) FROM annotation_item"
    out: dict[str, int] = {}
    with psycopg.connect(db_url) as conn:
        for name, sql in queries.items():
            row = conn.execute(sql).fetchone()
            assert row is not None  # an aggregate always returns one row
            out[name] = row[0]
    return out


class BackendCpu(threading.Thread):
    """Samples the CPU of the PostgreSQL backends serving `db` (same machine) until stopped: the
    database's share of an import, which the wall time alone mixes with waiting for a CPU."""

    def __init__(self, server_url: str, db: str) -> None:
        super().__init__(daemon=True)
        self.server_url, self.db = server_url, db
        self.ticks: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        import psycopg

        sql = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
        with psycopg.connect(self.server_url, autocommit=True) as conn:
            while not self.done.wait(0.25):
                for (pid,) in conn.execute(sql, [self.db]).fetchall():
                    ticks = cpu_ticks(pid)
                    if ticks:
                        self.ticks[pid] = max(self.ticks.get(pid, 0), sum(ticks))

    def seconds(self) -> float:
        self.done.set()
        self.join()
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")


def child_env(**extra: str) -> dict[str, str]:
    """The children's environment. Python's compiled bytecode is kept (in a cache folder of its
    own), as an installed app has it (pip compiles on install): a shell that sets
    PYTHONDONTWRITEBYTECODE would otherwise make the command compile Django, pandas and scipy
    from source on every run, seconds of CPU that are no part of an import. The migrate step
    before the import fills the cache."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "llmeval-pycache"))
    return {**env, **extra}


def run_import(server_url: str, db: str, path: Path) -> tuple[float, list[int], list[int], int]:
    env = child_env(DATABASE_URL=f"{server_url.rsplit('/', 1)[0]}/{db}",
                    DJANGO_SETTINGS_MODULE="config.settings")  # fmt: skip
    cmd = [sys.executable, "manage.py", "import_dataset", "--format", "csv", str(path),
           "--dataset", "bench-million", "--no-progress"]  # fmt: skip
    sampler = BackendCpu(server_url, db)
    sampler.start()
    before, t, cpu = cpu_ticks(), time.perf_counter(), child_cpu()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    after = cpu_ticks()
    # The command's own CPU and its PostgreSQL backend's; the rest of the wall time is waiting
    # (for a CPU on a loaded machine, for the disk).
    print(f"CPU: manage.py import_dataset {child_cpu() - cpu:.1f} s, "
          f"PostgreSQL backend {sampler.seconds():.1f} s")  # fmt: skip
    phases = [line for line in done.stdout.splitlines() if line.startswith("done in")]
    print(f"phases: {phases[-1] if phases else '(none printed)'}")
    if done.returncode:
        print(done.stdout[-2000:], done.stderr[-4000:], file=sys.stderr)
    return seconds, before, after, done.returncode


def child_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ratings", type=int, default=1_000_000)
    ap.add_argument("--questions", type=int, default=2500)
    ap.add_argument("--llms", type=int, default=10)
    ap.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server URL")
    ap.add_argument("--db", default="bench_million", help="the throwaway database's name")
    ap.add_argument("--file", default="/tmp/import_million.csv", help="where to write the CSV")
    ap.add_argument("--keep", action="store_true", help="keep the database afterwards")
    args = ap.parse_args()
    if args.ratings < 1 or args.questions < 1 or args.llms < 2:
        ap.error("--ratings and --questions need at least 1, --llms at least 2")
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", args.db):
        ap.error("--db: a lower-case name of letters, digits and _")
    path = Path(args.file)
    t = time.perf_counter()
    n = write_file(path, ratings=args.ratings, questions=args.questions, llms=args.llms)
    size = path.stat().st_size / 1e6
    print(
        f"file: {path} ({size:.0f} MB, {n:,} ratings), written in {time.perf_counter() - t:.1f} s"
    )

    import psycopg

    base = args.pg.rstrip("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {args.db}")
    db_url = f"{base}/{args.db}"
    env = child_env(DATABASE_URL=db_url)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    # Every module the import loads is compiled (and cached) before it is timed.
    subprocess.run([sys.executable, "manage.py", "import_dataset", "--help"], cwd=ROOT, env=env,
                   check=True, capture_output=True)  # fmt: skip
    seconds, before, after, rc = run_import(f"{base}/postgres", args.db, path)
    got = counts(db_url)
    steal = ""
    if before and after:
        d = [b - a for a, b in zip(before, after, strict=True)]
        total = sum(d) or 1
        steal = f", machine busy {100 * (total - d[3] - d[4] - d[7]) / total:.0f}%, " \
                f"steal {100 * d[7] / total:.1f}%"  # fmt: skip
    print(f"== import_million: {n:,} ratings in {seconds:.1f} s, {n / seconds:,.0f} ratings/s "
          f"(target < 30 s){steal}")  # fmt: skip
    print("database: " + ", ".join(f"{k} {v:,}" for k, v in got.items()))
    print(f"machine: {machine()}")
    if not args.keep:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
    ok = rc == 0 and got["rating"] == n and got["assignment"] == n and got["items_rated"] == n
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
