"""Helpers every format's parse() shares: progress bars, record names for messages, and the
checks that turn a file's values into text and scores."""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from annotation import inputs
from annotation.importers.bundle import ImportRefused, LinePlace, Place, Where, place
from annotation.importers.bundle import message as _
from annotation.importers.results import RepairLog

PROGRESS_MIN = 2000  # records; smaller files get no progress bar
# A published value outside the rubric's range is kept as given (and flagged) when it is a whole
# number in this span; anything beyond is a corrupt file, refused.
KEPT_RANGE = (0, 100)
_WHOLE = re.compile(r"-?[0-9]{1,6}")  # ASCII digits only: '²' and '٣' are not scores


def _tty() -> bool:
    return sys.stderr.isatty()


def progress(iterable: Iterable, *, total: int | None, desc: str, enabled: bool):
    """A tqdm bar on stderr over a large input when stderr is a terminal; the iterable otherwise."""
    if not enabled or (total is not None and total < PROGRESS_MIN) or not _tty():
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, leave=False, unit="rec")


class Bar:
    """A bar advanced by hand (records over several files, rows written in batches)."""

    def __init__(self, *, total: int, desc: str, enabled: bool) -> None:
        self._bar = None
        if enabled and total >= PROGRESS_MIN and _tty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, unit="rec")

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def at(file: str | Path, record: str | Place) -> Place:
    """'file, record N' for messages; records already named 'line N' or 'record N' stay so.
    The file name and a record's own id are kept as given (bundle.Place)."""
    if not isinstance(record, Place) and not str(record).startswith(
        ("line ", "record ", "dialog ")
    ):
        record = Place("record %(id)s", id=str(record))
    return place(Path(file).name, record)


def as_text(value: Any, *, what: str, file: str | Path, record: str, repairs: RepairLog) -> str:
    """Text fields must be strings; numbers and booleans are turned into their text (a counted
    repair), anything else is refused."""
    if isinstance(value, str):
        if "\x00" in value:  # PostgreSQL cannot store it in text; never data
            raise ImportRefused(
                _("%(where)s: %(what)s contains a NUL character", where=at(file, record), what=what)
            )
        return value
    if isinstance(value, bool):
        repairs.add(f"{what} was a JSON boolean, stored as the text 'True'/'False'", file, record)
        return "True" if value else "False"
    if isinstance(value, int | float):
        repairs.add(f"{what} was a JSON number, stored as text", file, record)
        return str(value)
    if value is None:
        raise ImportRefused(
            _("%(where)s: %(what)s is missing (null)", where=at(file, record), what=what)
        )
    raise ImportRefused(
        _(
            "%(where)s: %(what)s must be text, not %(type)s",
            where=at(file, record),
            what=what,
            type=type(value).__name__,
        )
    )


def whole_number(value: Any, *, criterion: str, file: str | Path, record: str) -> int:
    """A score as an int: JSON integers, integral floats and ASCII digit strings. Booleans,
    fractions, Unicode digits ('²', '٣') and numbers of more than six digits are refused."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**6:
        return value
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        return int(value.strip())
    raise ImportRefused(
        _(
            "%(where)s: score %(criterion)s=%(value)s is not a whole number",
            where=at(file, record),
            criterion=criterion,
            value=f"{value!r:.40}",
        )
    )


def iso_time(text: str) -> dt.datetime | None:
    """An ISO 8601 time (without an offset: UTC), or None when it is not one or lies outside
    the years 1-9999 once read as UTC ('0001-01-01T00:00+14:00' is in the year 0)."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
        if when.tzinfo is None:
            return when.replace(tzinfo=dt.UTC)
        if when.year in (1, 9999):  # only there can the offset carry it out of range
            when.astimezone(dt.UTC)  # what the database stores; OverflowError past 1 or 9999
    except (ValueError, OverflowError):
        return None
    return when


def check_score(
    value: Any,
    *,
    lo: int,
    hi: int,
    criterion: str,
    file: str | Path,
    record: str,
    keep_out_of_range: bool = False,
) -> int:
    """A whole number in the rubric's range lo-hi. With keep_out_of_range, a value outside it
    (but within KEPT_RANGE) is returned as given: the caller flags it (data as given)."""
    value = whole_number(value, criterion=criterion, file=file, record=record)
    if lo <= value <= hi:
        return value
    if keep_out_of_range and KEPT_RANGE[0] <= value <= KEPT_RANGE[1]:
        return value
    raise ImportRefused(
        _(
            "%(where)s: score %(criterion)s=%(value)s is outside the rubric's range %(lo)s-%(hi)s",
            where=at(file, record),
            criterion=criterion,
            value=value,
            lo=lo,
            hi=hi,
        )
    )


def parse_json(text: str, where: Where, *, jsonl: bool = False) -> Any:
    """Parsed JSON, or ImportRefused naming `where` (the file, or its line for JSONL)."""
    try:
        return inputs.json_loads(text)
    except json.JSONDecodeError as exc:
        if jsonl:
            hint = ""
            if exc.msg.startswith("Invalid control character"):  # "... at": Python's wording
                hint = _(
                    "; a tab, line break or NUL inside a text must be written as \\t, \\n, \\u0000"
                )
            raise ImportRefused(
                _(
                    "%(where)s: not valid JSON (%(error)s, column %(column)s%(hint)s)",
                    where=where,
                    error=inputs.json_reason(exc),
                    column=exc.colno,
                    hint=hint,
                )
            ) from exc
        raise ImportRefused(
            _(
                "%(where)s: not valid JSON at line %(line)s, column %(column)s: %(error)s",
                where=where,
                line=exc.lineno,
                column=exc.colno,
                error=inputs.json_reason(exc),
            )
        ) from exc
    except ValueError as exc:  # a number of more than 4,300 digits, nesting, a lone surrogate
        raise ImportRefused(
            _("%(where)s: not valid JSON: %(error)s", where=where, error=inputs.json_reason(exc))
        ) from exc


def unreadable(path: Path, exc: OSError | UnicodeDecodeError) -> ImportRefused:
    """The refusal for a file that cannot be read; text that is not UTF-8 says how to fix it."""
    if isinstance(exc, UnicodeDecodeError):
        byte = exc.object[exc.start : exc.start + 1].hex()
        return ImportRefused(
            _(
                "%(file)s: the file is not UTF-8 text (byte 0x%(byte)s cannot be read): save it as "
                "UTF-8 (in Excel: Save as > CSV UTF-8) and upload it again",
                file=path.name,
                byte=byte,
            )
        )
    return ImportRefused(_("%(file)s: cannot read the file: %(error)s", file=path.name, error=exc))


def read_jsonl(path: Path) -> list[tuple[int, object]]:
    """(line number, parsed object) for every non-blank line; bad JSON is refused by line."""
    out = []
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for number, line in enumerate(fh, start=1):
                if line.strip():
                    try:
                        rec = parse_json(line, LinePlace(path.name, number), jsonl=True)
                    except ImportRefused as exc:
                        if number == 1:
                            raise _csv_as_jsonl(exc, line) from exc
                        raise
                    out.append((number, rec))
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from exc
    return out


def _csv_as_jsonl(exc: ImportRefused, first_line: str) -> ImportRefused:
    """A CSV file uploaded as JSONL fails on its header: say so, and which format to pick."""
    cells = [c.strip().strip('"') for c in first_line.split(",")]
    if "type" not in cells:
        return ImportRefused(exc.args[0], errors=exc.errors)
    return ImportRefused(
        _("%(error)s; the line looks like a CSV header: choose the format csv", error=exc.args[0])
    )


def read_json(path: Path) -> Any:
    """A whole JSON file, parsed; bad JSON is refused naming its line and column."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from exc
    return parse_json(text, place(path.name))


Columns = frozenset[str] | None  # a CSV file's header (None: a JSONL file, which has none)


def missing_column(file: str, key: str, kind: object) -> ImportRefused:
    """A field a record needs whose column the CSV header lacks: said once for the file."""
    return ImportRefused(
        _(
            "%(file)s: the CSV header has no column %(key)s, which %(type)s rows need",
            file=file,
            key=key,
            type=kind,
        )
    )


def csv_rows(path: Path) -> Iterator[tuple[list[str], int, list[str]]]:
    """(header, line number, cells) per non-blank CSV row; streamed (a million rows are never
    all held at once)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if not header or "type" not in header:
                hint = ""
                if header and header[0].lstrip().startswith("{"):
                    hint = _("; the file looks like JSON Lines: choose the format jsonl")
                raise ImportRefused(
                    _(
                        "%(file)s: the CSV header needs a 'type' column%(hint)s",
                        file=path.name,
                        hint=hint,
                    )
                )
            width = len(header)
            for number, row in enumerate(reader, start=2):
                if len(row) > width:
                    raise ImportRefused(
                        _(
                            "%(where)s: more cells than columns",
                            where=place(path.name, f"line {number}"),
                        )
                    )
                if row:  # a blank line, as csv.DictReader skips it
                    yield header, number, row
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from exc
    except csv.Error as exc:
        raise ImportRefused(
            _("%(file)s: cannot read the CSV: %(error)s", file=path.name, error=exc)
        ) from exc


def jsonl_records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) per line of a JSONL file of objects (the generic format)."""
    out = []
    for number, rec in read_jsonl(path):
        if not isinstance(rec, dict):
            raise ImportRefused(
                _("%(where)s: expected an object", where=LinePlace(path.name, number))
            )
        out.append((number, rec))
    return iter(out)
