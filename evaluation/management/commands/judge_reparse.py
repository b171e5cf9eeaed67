"""python manage.py judge_reparse (--run ID [--run ID ...] | --all) [--study STUDY]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from config.cli import row_id
from evaluation import recording
from evaluation.models import JudgeRun


class Command(BaseCommand):
    help = (
        "Re-read the stored raw outputs of judge runs with today's parsers, offline: no API "
        "call is made. Parsed scores and choices, parse failures and the judge's ratings are "
        "updated (a verdict that now parses becomes a rating; one that no longer parses loses "
        "its rating). Prints, per run, how many calls changed and the parsed / failed counts "
        "before and after. Runs still executing are skipped."
    )

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument(
            "--run", type=row_id, action="append", metavar="ID", help="A run id (repeatable)."
        )
        which.add_argument("--all", action="store_true", help="Every run (of --study if given).")
        parser.add_argument(
            "--study", type=row_id, metavar="ID", help="With --all: one study only."
        )

    def handle(self, *args, **opts):
        runs = JudgeRun.objects.order_by("pk")
        if opts["run"]:
            ids = set(opts["run"])
            runs = runs.filter(pk__in=ids)
            missing = ids - set(runs.values_list("pk", flat=True))
            if missing:
                raise CommandError(f"No run {', '.join(str(i) for i in sorted(missing))}.")
        elif opts["study"] is not None:
            runs = runs.filter(study_id=opts["study"])
        totals = {"runs": 0, "changed": 0, "skipped": 0}
        for run in runs:
            if run.is_active:
                self.stdout.write(f"Run {run.pk}: skipped, it is {run.status}.")
                totals["skipped"] += 1
                continue
            before_ok, before_failed = run.n_ok, run.n_parse_failed
            result = recording.judge_run_reparse(run=run)
            totals["runs"] += 1
            totals["changed"] += result["changed"]
            self.stdout.write(
                f"Run {run.pk}: {result['changed']} changed; parsed {before_ok} -> "
                f"{result['ok']}, parse failures {before_failed} -> {result['parse_failed']}."
            )
        self.stdout.write(
            f"Re-parsed {totals['runs']} run(s): {totals['changed']} call(s) changed, "
            f"{totals['skipped']} skipped."
        )
