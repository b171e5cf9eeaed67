"""serve_load.py's database side: a throwaway PostgreSQL database holding one large pairwise
study (COPY-loaded history plus fresh items), and its reset for --reuse-db. Also the small helpers
the driver and the client processes share."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
N_LLMS = 10
PAIRS_PER_QUESTION = N_LLMS * (N_LLMS - 1) // 2


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


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


def _insert_study(cur, n: int) -> tuple[int, int, str, list[int]]:
    """The owner, dataset, LLMs and the live crowd study: (dataset, study, public id, LLM ids)."""
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
        "now()) RETURNING id, public_id",
        [uuid.uuid4().hex[:16], dataset, owner, rubric, n],
    )
    study, study_pid = cur.fetchone()
    return dataset, study, study_pid, llm_ids


def _copy_questions(cur, dataset: int, llm_ids: list[int], n_questions: int) -> dict:
    """Questions and every LLM's answer to each: question id -> its response ids."""
    text = "An answer of moderate length. " * 20
    copy_rows(
        cur,
        "annotation_question",
        ["dataset_id", "external_id", "text", "task_type", "subcategory", "kind",
         "answer_type", "reference", "meta"],
        ((dataset, f"Q{q}", f"Benchmark question {q}?", "bench", "", "subjective", "",
          "A reference answer.", "{}") for q in range(n_questions)),
    )  # fmt: skip
    cur.execute("SELECT id FROM annotation_question WHERE dataset_id = %s ORDER BY id", [dataset])
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
    responses: dict[int, list[int]] = {q: [] for q in qids}
    for q, r in cur.fetchall():
        responses[q].append(r)
    return responses


def _copy_items(cur, study: int, responses: dict, full: int, total: int, n: int) -> None:
    """`total` pair items, the first `full` of them already rated N times."""
    rng = random.Random(42)

    def items():
        made = 0
        for q, rs in responses.items():
            for i in range(len(rs)):
                for j in range(i + 1, len(rs)):
                    if made >= total:
                        return
                    ratings = n if made < full else 0
                    yield (study, q, rs[i], rs[j], ratings, 0, rng.randrange(2**31 - 1), "{}")
                    made += 1

    copy_rows(
        cur,
        "annotation_item",
        ["study_id", "question_id", "response_a_id", "response_b_id", "n_ratings", "n_reserved",
         "shuffle", "check_answer"],
        items(),
    )  # fmt: skip


def _copy_history(cur, study: int, full_items: int, n: int) -> int:
    """Historic raters, their submitted first exposures of the complete items and the ratings."""
    historic_raters = max(n + 1, min(5000, full_items))
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
    cur.execute(
        "INSERT INTO annotation_rating (assignment_id, item_id, rater_id, choice, comment, "
        "created_at, updated_at) SELECT id, item_id, rater_id, "
        "(ARRAY['A','B','tie','both_bad'])[1 + (id %% 4)], '', submitted_at, submitted_at "
        "FROM annotation_assignment WHERE study_id = %s",
        [study],
    )
    return len(plan)


def load_study(db_url: str, *, assignments: int, fresh_items: int, n: int) -> dict:
    """COPY a pairwise study: `assignments` historic submitted first exposures (with ratings) on
    complete items, plus `fresh_items` items with no ratings yet."""
    import psycopg

    full_items = -(-assignments // n)  # at least `assignments` stored
    total_items = full_items + fresh_items
    n_questions = -(-total_items // PAIRS_PER_QUESTION)
    t0 = time.perf_counter()
    with psycopg.connect(db_url) as conn, conn.cursor() as cur:
        dataset, study, study_pid, llm_ids = _insert_study(cur, n)
        responses = _copy_questions(cur, dataset, llm_ids, n_questions)
        _copy_items(cur, study, responses, full_items, total_items, n)
        log(
            f"  {total_items:,} items, {n_questions:,} questions ({time.perf_counter() - t0:.0f} s)"
        )
        stored = _copy_history(cur, study, full_items, n)
        log(f"  {stored:,} assignments and their ratings ({time.perf_counter() - t0:.0f} s)")
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
        count = cur.fetchone()
        if count is None or count[0] != full_items + fresh_items:
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


INTEGRITY_SQL = {
    "over": "SELECT count(*) FROM (SELECT i.id FROM annotation_item i "
    "LEFT JOIN annotation_rating r ON r.item_id = i.id "
    "LEFT JOIN annotation_assignment a ON a.id = r.assignment_id AND NOT a.is_repeat "
    "WHERE i.study_id = %(study)s GROUP BY i.id "
    "HAVING count(a.id) > %(n)s OR max(i.n_ratings) > %(n)s) x",
    "mismatched": "SELECT count(*) FROM (SELECT i.id, max(i.n_ratings) AS n, count(a.id) AS c "
    "FROM annotation_item i LEFT JOIN annotation_rating r ON r.item_id = i.id "
    "LEFT JOIN annotation_assignment a ON a.id = r.assignment_id AND NOT a.is_repeat "
    "WHERE i.study_id = %(study)s GROUP BY i.id HAVING max(i.n_ratings) <> count(a.id) "
    "OR max(i.n_reserved) <> 0) x",
    "below": "SELECT count(*) FROM annotation_item WHERE study_id = %(study)s "
    "AND n_ratings < %(n)s",
    "stored": "SELECT count(*) FROM annotation_assignment a JOIN annotation_rating r "
    "ON r.assignment_id = a.id WHERE a.public_id = ANY(%(acked)s::uuid[])",
    "served": "SELECT count(*), count(*) FILTER (WHERE a.is_repeat) FROM annotation_assignment a "
    "JOIN annotation_rater r ON r.id = a.rater_id "
    "WHERE a.study_id = %(study)s AND r.external_id LIKE 'bench-%%'",
}


def integrity(db_url: str, study_id: int, n: int, acked: list[str]) -> dict:
    """Counts straight from the database, after the reservations of stopped clients lapse."""
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.db import connection

    from annotation.engine import assignments_expire
    from annotation.models import Study

    study = Study.objects.get(pk=study_id)
    out: dict[str, Any] = {"open_before": study.assignments.filter(status="served").count()}
    # Reservations of annotators stopped mid-item (or walked away from) lapse and return items.
    assignments_expire(study=study, now=study.created_at.replace(year=2100))
    params: dict[str, int | list[str]] = {"study": study.pk, "n": n, "acked": acked}
    with connection.cursor() as cur:
        for key, sql in INTEGRITY_SQL.items():
            cur.execute(sql, params)
            row = cur.fetchone()
            assert row is not None  # each query is an aggregate: one row
            out[key] = row if key == "served" else row[0]
    out["lost"] = len(acked) - out["stored"]
    return out


def drop_database(args) -> None:
    from django.db import connections

    connections.close_all()
    import psycopg

    with psycopg.connect(args.db_base + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.db_name}" WITH (FORCE)')


def prepare_database(args: Any) -> tuple[str, dict[str, Any]]:
    """The benchmark's database: reset from --reuse-db or loaded afresh, in the asked mode."""
    db_url, info = _load_or_reset(args)
    _set_assignment_mode(db_url, info["study"], args.assignment_mode)
    return db_url, info


def _load_or_reset(args: Any) -> tuple[str, dict[str, Any]]:
    size = {"assignments": args.assignments, "fresh_items": args.fresh_items, "n": args.n}
    db_url = f"{args.db_base}/{args.db_name}"
    info = reset_study(db_url, **size) if args.reuse_db else None
    if info is not None:
        log(f"reusing database {args.db_name}, reset to its loaded state")
        return db_url, info
    log(f"creating database {args.db_name}")
    db_url = recreate_database(args.db_base, args.db_name)
    env = {**os.environ, "DATABASE_URL": db_url}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    log(f"loading {args.assignments:,} assignments + {args.fresh_items:,} fresh items")
    return db_url, load_study(db_url, **size)


def _set_assignment_mode(db_url: str, study_id: int, mode: str) -> None:
    """The study's assignment mode (uniform or adaptive: the pick by refreshed priorities)."""
    import psycopg

    with psycopg.connect(db_url) as conn, conn.cursor() as cur:
        cur.execute(
            "UPDATE annotation_study SET assignment_mode = %s WHERE id = %s", [mode, study_id]
        )
    log(f"assignment mode: {mode}")


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


def cpu_times() -> list[int]:
    """The machine's CPU time counters (Linux /proc/stat: user nice system idle iowait irq
    softirq steal), or [] elsewhere."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return []


def redis_reachable(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def server_env(db_url: str) -> dict[str, str]:
    """The environment the app runs in during a benchmark, as in production: DEBUG off,
    persistent database connections, the shared Redis cache (and sessions) when Redis answers."""
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "DEBUG": "false",
        "SECRET_KEY": "benchmark-only-" + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "DB_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "ERROR",
        # Every simulated worker comes from 127.0.0.1: no per-address cap on open items.
        "ANNOTATION_OPEN_PER_ADDRESS": "0",
        "ANNOTATION_CROWD_ARRIVALS_PER_HOUR": "0",
    }
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")
    if redis_reachable(redis_url):
        env["REDIS_URL"] = redis_url
        log(f"cache and sessions: {redis_url}")
    else:
        env.pop("REDIS_URL", None)
        log("Redis is not reachable: per-process cache, database sessions")
    return env
