"""python manage.py report --study STUDY --format {json,csv,xlsx} [--out PATH] [filters]"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from config.cli import add_study_argument, add_switches, object_by_ref, passed_on
from ranking import exports, selectors
from ranking.services import ReportFilters, report_build
from ranking.stats.leaderboards import BT_TIES


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise CommandError(f"Not a date (YYYY-MM-DD): {value!r}") from exc


class Command(BaseCommand):
    help = (
        "Write a study's full statistics report (leaderboards, correlations, accuracy, "
        "consistency, length bias, gaps, Elo stability, agreement, diagnostics). "
        "json: one document; xlsx: one sheet per table; csv: one CSV per table, in a zip when "
        "--out ends in .zip (the default name), else in the folder --out names; excel-csv: the "
        "same zip with a UTF-8 byte-order mark at the start of each file, for Excel."
    )

    def add_arguments(self, parser):
        add_study_argument(parser)
        parser.add_argument("--format", choices=exports.FORMATS, default="json", dest="fmt")
        parser.add_argument(
            "--out",
            help="Output file (or folder for csv). Default: study-<id>-report.<ext> in the "
            "current folder; '-' writes json to standard output.",
        )
        parser.add_argument(
            "--pool", action="append", default=[], help="onsite, crowd, public or judge (repeat)."
        )
        parser.add_argument(
            "--criterion", action="append", default=[], help="Criterion key (repeat)."
        )
        parser.add_argument("--task-type", action="append", default=[], help="Task type (repeat).")
        parser.add_argument("--start", type=_date, help="First day (UTC, YYYY-MM-DD), inclusive.")
        parser.add_argument("--end", type=_date, help="Last day (UTC, YYYY-MM-DD), inclusive.")
        parser.add_argument("--min-accuracy", type=float, help="Leave out raters below (0-1).")
        parser.add_argument("--min-consistency", type=float, help="Leave out raters below (0-1).")
        add_switches(
            parser,
            {"--exclude-simulated": "Leave out simulated raters (manage.py simulate_ratings)."},
        )
        parser.add_argument(
            "--bt-ties",
            choices=BT_TIES,
            default="half",
            help="Bradley-Terry: a tie counts as half a win for each side (half, default) or the "
            "tied matches are left out of the fit (exclude).",
        )
        parser.add_argument(
            "--min-ratings",
            type=int,
            default=5,
            help="Raters with fewer ratings are left out of accuracy and consistency (default 5).",
        )

    def handle(self, *args, study, fmt, out, **opts):
        obj = object_by_ref(Study, study)
        choices = selectors.study_filter_choices(obj)
        checks = {
            "--pool": (opts["pool"], {"onsite", "crowd", "public", "judge"}),
            "--criterion": (opts["criterion"], {k for k, _ in choices["criteria"]}),
            "--task-type": (opts["task_type"], {k for k, _ in choices["task_types"]}),
        }
        for flag, (values, allowed) in checks.items():
            bad = [v for v in values if v not in allowed]
            if bad:
                raise CommandError(
                    f"{flag}: not in study {obj.name!r}: {', '.join(bad)} "
                    f"(choose from {', '.join(sorted(allowed)) or 'nothing'})."
                )
        for flag in ("min_accuracy", "min_consistency"):
            if opts[flag] is not None and not 0 <= opts[flag] <= 1:
                raise CommandError(f"--{flag.replace('_', '-')} must be between 0 and 1.")
        if opts["start"] and opts["end"] and opts["start"] > opts["end"]:
            raise CommandError("--start is after --end.")
        filters = ReportFilters.build(
            pools=opts["pool"],
            criteria=opts["criterion"],
            task_types=opts["task_type"],
            **passed_on(
                opts,
                "start",
                "end",
                "min_accuracy",
                "min_consistency",
                "min_ratings",
                "exclude_simulated",
                "bt_ties",
            ),
        )
        report = report_build(study=obj, filters=filters, use_cache=False)
        if out == "-":
            if fmt != "json":
                raise CommandError("Only --format json can be written to standard output.")
            self.stdout.write(exports.to_json(report).decode("utf-8"))
            return
        path = Path(out or exports.filename(report, fmt))
        try:
            if fmt == "csv" and path.suffix.lower() != ".zip":
                written = exports.write_csv_dir(report, path)
                self.stdout.write(f"Wrote {len(written)} CSV files to {path}/")
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(exports.render(report, fmt))
        except OSError as e:  # no permission, a file where a folder should be, a full disk
            raise CommandError(f"Cannot write {path}: {e.strerror or e}") from None
        meta = report.meta
        self.stdout.write(
            f"Wrote {path} ({meta.get('n_star_ratings', 0)} star ratings, "
            f"{meta.get('n_pair_ratings', 0)} pairwise ratings, {meta.get('n_raters', 0)} raters, "
            f"{meta.get('seconds', '?')} s)."
        )
