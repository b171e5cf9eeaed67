"""python manage.py export_data --study NAME|ID --what ratings|responses|generic
--format csv|jsonl|xlsx [--out PATH]"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.exports import FORMATS, WHATS, export_write
from annotation.models import Study
from config.cli import add_study_argument, object_by_ref


class Command(BaseCommand):
    help = (
        "Export a study's raw data: its responses, or its ratings (one row per rating x criterion "
        "for star studies, one row per rating for pairwise; raters by pseudonym, with pool and "
        "the exposure context) as CSV, JSONL or XLSX. --what generic writes the study in the "
        "import format (questions, responses and every rating with its times, pool, platform, "
        "repeats, hint, sides, active time, flags and unparsed judge outputs), which "
        "import_dataset --format jsonl|csv reads back unchanged. Writes to --out or standard output."
    )

    def add_arguments(self, parser):
        add_study_argument(parser)
        parser.add_argument("--what", choices=WHATS, default="ratings")
        parser.add_argument("--format", choices=FORMATS, default="csv")
        parser.add_argument("--out", help="File to write (default: standard output).")

    def handle(self, *args, **opts):
        study = object_by_ref(Study, opts["study"])
        if opts["format"] == "xlsx" and not opts["out"] and sys.stdout.isatty():
            raise CommandError("XLSX is binary: give --out PATH.")
        if opts["out"]:
            try:
                with open(opts["out"], "wb") as fh:
                    n = export_write(study, what=opts["what"], fmt=opts["format"], out=fh)
            except OSError as e:  # a missing folder, no permission, a full disk
                raise CommandError(f"Cannot write {opts['out']}: {e.strerror or e}") from None
            self.stderr.write(f"wrote {n} bytes to {opts['out']}")
        else:
            self.stdout.flush()
            export_write(study, what=opts["what"], fmt=opts["format"], out=sys.stdout.buffer)
