"""serve_load.py's database side: a throwaway PostgreSQL database holding one large pairwise
study (COPY-loaded history plus fresh items), and its reset for --reuse-db. Also the small helpers
the driver and the client processes share."""

from __future__ import annotations

import random
import sys
import time
import uuid
from pathlib import Path

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
