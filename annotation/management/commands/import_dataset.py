"""python manage.py import_dataset --format FORMAT PATH... [--dataset NAME] [--study NAME]
[--rater NAME --rater-kind human|judge] [--rubric KEY] [--user USERNAME] [--dry-run] [--no-progress]
"""

from __future__ import annotations

import textwrap
import time
from argparse import RawDescriptionHelpFormatter

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.importers import FORMATS, ImportRefused, dataset_import
from config.cli import add_switches, passed_on
from ranking.warm import reports_warm


def _formats_help() -> str:
    lines = ["formats:"]
    for f in FORMATS.values():
        lines.append(f"  {f.name}")
        lines.append(textwrap.fill(f.help, 78, initial_indent=" " * 6, subsequent_indent=" " * 6))
    lines.append("")
    lines.append(
        "Every import is atomic (a refusal writes nothing) and idempotent (importing the same "
        "file again adds nothing). Defects the importer knows how to repair are repaired and "
        "counted; published values are never changed: a score outside the rubric's range is "
        "kept as given and flagged (the report's data quality table counts it). --dry-run "
        "checks and counts without writing. See docs/import-formats.md."
    )
    lines[-1] = textwrap.fill(lines[-1], 78)
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Import questions, LLM answers and existing ratings from files of a known format."
    # A data command: Django's system checks (they load every template) cost seconds at the
    # start of each import; `manage.py check` and the server run them.
    requires_system_checks: list[str] = []

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.formatter_class = RawDescriptionHelpFormatter
        parser.epilog = _formats_help()
        return parser

    def add_arguments(self, parser):
        parser.add_argument(
            "paths", nargs="+", metavar="PATH", help="Files (or a folder for chinese-alpaca-eval)."
        )
        parser.add_argument("--format", required=True, choices=list(FORMATS), help="See below.")
        parser.add_argument("--dataset", help="Dataset name (default: per format).")
        parser.add_argument("--study", help="Study for imported ratings (default: per format).")
        parser.add_argument("--rater", help="Rater name for score files whose path does not say.")
        parser.add_argument("--rater-kind", choices=["human", "judge"])
        parser.add_argument("--rubric", help="Rubric key for star ratings (generic formats).")
        parser.add_argument(
            "--user", help="Username recorded as owner of new datasets and studies."
        )
        add_switches(
            parser,
            {"--dry-run": "Check and count; write nothing.", "--no-progress": "No progress bar."},
        )

    def handle(self, *args, **opts):
        user = None
        if opts["user"]:
            user = get_user_model().objects.filter(username=opts["user"]).first()
            if user is None:
                raise CommandError(f"No user {opts['user']!r}.")
        t0 = time.perf_counter()
        try:
            result = dataset_import(
                user=user,
                progress=not opts["no_progress"],
                **passed_on(
                    opts,
                    "format",
                    "paths",
                    "dry_run",
                    "dataset",
                    "study",
                    "rater",
                    "rater_kind",
                    "rubric",
                ),
            )
        except ImportRefused as exc:
            raise CommandError(f"refused, nothing was written: {exc}") from exc
        reports_warm(result.study_ids, dry_run=result.dry_run)  # large studies' reports, queued
        for line in result.summary_lines():
            self.stdout.write(line)
        self.stdout.write(f"done in {time.perf_counter() - t0:.1f} s ({result.timing_line()})")
