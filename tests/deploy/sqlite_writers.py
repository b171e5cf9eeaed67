"""Run by tests/deploy/test_sqlite_writers.py in a process of its own, on the SQLite file that
DATABASE_URL names (with the settings' own SQLite options): N onsite annotators, each in a thread
with its own test client (and so its own database connection, as under a threaded server),
log in and rate items of one live star study at the same moment. Prints a JSON summary: the
errors (a "database is locked" would be one) and what was stored."""

from __future__ import annotations

import json
import os
import sys
import threading

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from annotation.models import Assignment, Rating, Rubric  # noqa: E402
from tests.factories import make_rater, make_study  # noqa: E402

N_ANNOTATORS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
PER_ANNOTATOR = int(sys.argv[2]) if len(sys.argv) > 2 else 4


def _rate(user, study, barrier: threading.Barrier, errors: list[str]) -> None:
    client = Client(raise_request_exception=True)
    try:
        barrier.wait()
        client.force_login(user)  # a session row written at the same moment too
        for _ in range(PER_ANNOTATOR):
            served = client.get(reverse("annotate:next", args=[study.public_id]))
            if served.status_code != 302:
                errors.append(f"serve: {served.status_code}")
                return
            pid = served["Location"].rstrip("/").split("/")[-1]
            a = Assignment.objects.select_related("item__question").get(public_id=pid)
            criteria = Rubric.objects.get(pk=study.rubric_id).criteria_for(a.item.question)
            data = {f"c_{c.key}": str(c.min_score) for c in criteria}
            sent = client.post(reverse("annotate:assignment", args=[pid]), data)
            if sent.status_code != 302:
                errors.append(f"submit: {sent.status_code}")
                return
    except Exception as exc:  # noqa: BLE001 - the summary reports whatever went wrong
        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        connection.close()


def main() -> None:
    call_command("migrate", verbosity=0)
    study = make_study(n_questions=N_ANNOTATORS * PER_ANNOTATOR, n_llms=2, ratings_per_item=1)
    users = [make_rater().user for _ in range(N_ANNOTATORS)]
    connection.close()
    barrier, errors = threading.Barrier(N_ANNOTATORS), []
    threads = [threading.Thread(target=_rate, args=(u, study, barrier, errors)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with connection.cursor() as cur:
        cur.execute("PRAGMA journal_mode")
        journal = cur.fetchone()[0]
    print(
        json.dumps(
            {
                "errors": errors,
                "ratings": Rating.objects.filter(assignment__study=study).count(),
                "journal_mode": journal,
                "options": settings.DATABASES["default"].get("OPTIONS", {}),
            }
        )
    )


if __name__ == "__main__":
    main()
