"""Benchmark: import all of LLMEval-2 (questions, answers, the human and the GPT-4 score sets) into
PostgreSQL, then import it again (which must add nothing).

    .venv/bin/python benchmarks/import_llmeval2.py [--data DIR] [--pg postgres://postgres@127.0.0.1:5432]

Creates a throwaway database (bench_import), migrates it, runs the importers exactly as
`manage.py import_dataset` does, prints the elapsed time, rows per second and the counts, and drops
the database. Target: under 30 s for everything.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "llmeval-2"
DB_NAME = "bench_import"


def _timed_imports(dataset_import, data_files, score_files):
    """Questions and answers, then both score sets: the two results and their times."""
    t0 = time.perf_counter()
    a = dataset_import(format="llmeval2", paths=data_files, progress=False)
    t1 = time.perf_counter()
    b = dataset_import(format="llmeval2-scores", paths=score_files, progress=False)
    t2 = time.perf_counter()
    return a, b, t1 - t0, t2 - t1


def _report(data: Path, a, b, ta: float, tb: float) -> dict[str, int]:
    """Print the timings and counts of one import; the rows added per table."""
    total = ta + tb
    added = {k: a.added[k] + b.added[k] for k in a.added}
    rows = sum(added.values())
    print(f"PostgreSQL import of {data}")
    print(f"  questions+answers (llmeval2):        {ta:6.2f} s  {a.total_added:>7} rows")
    print(f"  both score sets (llmeval2-scores):   {tb:6.2f} s  {b.total_added:>7} rows")
    print(
        f"  total:                               {total:6.2f} s  {rows:>7} rows  "
        f"{rows / total:,.0f} rows/s  (target < 30 s: {'met' if total < 30 else 'MISSED'})"
    )
    print("  added: " + ", ".join(f"{k} {v}" for k, v in added.items()))
    print(
        f"  repairs: {sum(len(r.records) for r in a.repairs + b.repairs)} "
        f"({len(a.repairs) + len(b.repairs)} kinds)"
    )
    return added


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="The llmeval-2 folder.")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="Server URL.")
    parser.add_argument("--keep", action="store_true", help="Keep the database afterwards.")
    args = parser.parse_args()
    data = Path(args.data)
    if not (data / "data").is_dir():
        print(f"no LLMEval-2 data in {data}", file=sys.stderr)
        return 2

    import psycopg

    admin_url = f"{args.pg.rstrip('/')}/postgres"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")

    os.environ["DATABASE_URL"] = f"{args.pg.rstrip('/')}/{DB_NAME}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from annotation.importers import dataset_import

    try:
        call_command("migrate", verbosity=0)
        data_files = sorted((data / "data").glob("*_data.json"))
        score_files = sorted((data / "results" / "human-score").glob("*.json")) + sorted(
            (data / "results" / "gpt-score").glob("*.json")
        )

        run = partial(_timed_imports, dataset_import, data_files, score_files)
        a, b, ta, tb = run()
        added = _report(data, a, b, ta, tb)

        a2, b2, ta2, tb2 = run()
        again = a2.total_added + b2.total_added
        print(f"  re-import: {ta2 + tb2:.2f} s, {again} rows added (expected 0)")
        ok = again == 0 and added["questions"] == 480 and added["responses"] == 9600
        return 0 if ok else 1
    finally:
        connections.close_all()
        if not args.keep:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")


if __name__ == "__main__":
    sys.exit(main())
