"""python manage.py export_data --study NAME|ID --what ratings|responses|generic
--format csv|jsonl|xlsx [--out PATH]"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from annotation.exports import FORMATS, WHATS, export_write
from annotation.models import Study


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
        parser.add_argument("--study", required=True, help="Study id or exact name.")
        parser.add_argument("--what", choices=WHATS, default="ratings")
        parser.add_argument("--format", choices=FORMATS, default="csv")
        parser.add_argument("--out", help="File to write (default: standard output).")

    def handle(self, *args, **opts):
        ref = opts["study"]
        study = Study.objects.filter(pk=int(ref)).first() if ref.isdigit() else None
        study = study or Study.objects.filter(name=ref).first()
        if study is None:
            raise CommandError(f"No study with id or name {ref!r}.")
        if opts["format"] == "xlsx" and not opts["out"] and sys.stdout.isatty():
            raise CommandError("XLSX is binary: give --out PATH.")
        if opts["out"]:
            with open(opts["out"], "wb") as fh:
                n = export_write(study, what=opts["what"], fmt=opts["format"], out=fh)
            self.stderr.write(f"wrote {n} bytes to {opts['out']}")
        else:
            self.stdout.flush()
            export_write(study, what=opts["what"], fmt=opts["format"], out=sys.stdout.buffer)
