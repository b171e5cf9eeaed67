"""The data of the two-server test, built in the database named by DATABASE_URL (run as a process:
`python -m tests.deploy.cluster_data --judge-url URL --key-env NAME`). Prints the ids as JSON.

- an operator account (superuser) with an API token;
- `coverage`: a live pairwise crowd study, every item to be rated by N=3 distinct workers;
- `capped`: a live pairwise crowd study for the per-address cap on open items;
- `public`: a live pairwise study open to public sign-up;
- `judged`: a star study and a judge pointed at the local OpenAI-compatible test server.
"""

from __future__ import annotations

import argparse
import json
import os

RATINGS_PER_ITEM = 3


def _live(study, **fields):
    from annotation.models import Study
    from annotation.services import study_set_status

    for name, value in fields.items():
        setattr(study, name, value)
    study.save(update_fields=list(fields))
    return study_set_status(study=study, status=Study.Status.LIVE)


def build(*, judge_url: str, key_env: str, coverage_items: int) -> dict:
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from annotation.models import Study
    from evaluation.testing.scenario import build as scenario

    operator = User.objects.create_superuser("ops", password="ops-pass-123")
    common = {"base_url": judge_url, "concurrency": 4, "key_env": key_env}
    ids = {"token": Token.objects.create(user=operator).key}
    judged = scenario(items=8, **common)
    ids.update(judged=judged["study"], judge=judged["judge"], judged_items=judged["items"])
    for name, items, fields in (
        ("coverage", coverage_items, {"admit_crowd": True}),
        ("capped", 12, {"admit_crowd": True}),
        ("public", 4, {"admit_public": True}),
    ):
        built = scenario(items=items, mode="pairwise", **common)
        study = _live(
            Study.objects.get(pk=built["study"]), ratings_per_item=RATINGS_PER_ITEM, **fields
        )
        ids[name] = {"id": study.pk, "pid": study.public_id, "items": built["items"]}
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--judge-url", required=True)
    parser.add_argument("--key-env", required=True)
    parser.add_argument("--coverage-items", type=int, default=24)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    ids = build(judge_url=args.judge_url, key_env=args.key_env, coverage_items=args.coverage_items)
    print(json.dumps(ids))


if __name__ == "__main__":
    main()
