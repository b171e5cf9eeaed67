"""python manage.py simulate_ratings --study STUDY [--raters-per-pool N] [--seed S] [--force | --more]"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from config.cli import add_study_argument, add_switches, object_by_ref, passed_on
from ranking.simulate import POOLS, simulate_ratings


class Command(BaseCommand):
    help = (
        "Add SIMULATED human raters (pools onsite, crowd, public; named sim-<pool>-NN, "
        "Rater.meta.simulated = true) to a study, with ratings derived from its real human "
        "scores plus pool-specific noise, ~2%% hidden repeats, random sides and plausible times. "
        "For demos of the report's pool, consistency and agreement tables. Idempotent: a study "
        "that already has simulated ratings gets nothing new unless --force or --more."
    )

    def add_arguments(self, parser):
        add_study_argument(parser)
        parser.add_argument("--raters-per-pool", type=int, default=8)
        parser.add_argument("--ratings-per-item", type=int, default=1, help="Per pool (default 1).")
        parser.add_argument(
            "--pool", action="append", choices=POOLS, help="Repeat; default all three."
        )
        parser.add_argument("--repeat-rate", type=float, default=0.02)
        parser.add_argument("--max-items", type=int, help="Simulate on a random subset of items.")
        parser.add_argument("--seed", type=int, default=0)
        group = parser.add_mutually_exclusive_group()
        add_switches(
            group,
            {
                "--force": "Replace existing simulated ratings.",
                "--more": "Add another round with new raters.",
            },
        )

    def handle(self, *args, **opts):
        obj = object_by_ref(Study, opts["study"])
        if not 0 <= opts["repeat_rate"] <= 0.5:
            raise CommandError("--repeat-rate must be between 0 and 0.5.")
        t0 = time.perf_counter()
        try:
            result = simulate_ratings(
                study=obj,
                pools=tuple(opts["pool"] or POOLS),
                **passed_on(
                    opts,
                    "raters_per_pool",
                    "seed",
                    "ratings_per_item",
                    "repeat_rate",
                    "max_items",
                    "force",
                    "more",
                ),
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{result.message} ({time.perf_counter() - t0:.1f} s)")
