"""The generic format for users' own data: JSONL (one object a line) or CSV (a header row), each
record typed by its `type` field: question, response, rating (star, one criterion a row or a
`scores` object in JSONL) or pairwise. docs/import-formats.md has the schema and examples.

It carries everything a rating has (times, rater pool and platform, repeats, hint, sides shown,
active time, unparsed judge outputs), so `export_data --what generic` and this importer
round-trip a study: export -> import -> export gives the same file.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

import annotation.importers.bundle as specs
from annotation.importers.base import (
    ImportRefused,
    Options,
    RepairLog,
    as_text,
    check_score,
    progress,
)
from annotation.importers.bundle import LinePlace, Where
from annotation.importers.bundle import message as _
from annotation.importers.reading import Columns, iso_time, missing_column
from annotation.importers.reading import csv_rows as _csv_rows
from annotation.importers.reading import jsonl_records as _jsonl_records

TYPES = ("question", "response", "rating", "pairwise")
QUESTION = ["question_id", "text", "task_type", "subcategory", "kind", "answer_type", "reference"]
RESPONSE = ["question_id", "llm", "text", "response_id"]
RATER = ["rater", "rater_kind", "rater_pool", "rater_platform"]
EXPOSURE = [
    "hint_shown",
    "is_repeat",
    "served_at",
    "submitted_at",
    "active_ms",
    "comment",
    "parse_status",
    "raw_output",
]
RATING = ["question_id", "llm", *RATER, "scores", "criterion", "score", "out_of_range", *EXPOSURE]
PAIRWISE = ["question_id", "llm_a", "llm_b", *RATER, "choice", "left", *EXPOSURE]
FIELDS = {"question": QUESTION, "response": RESPONSE, "rating": RATING, "pairwise": PAIRWISE}
KNOWN = {kind: frozenset([*names, "type"]) for kind, names in FIELDS.items()}
CHOICES = {"a": "first", "b": "second", "tie": "tie", "both_bad": "both_bad"}
TRUE = {"1", "true", "yes", "y", "t"}
FALSE = {"0", "false", "no", "n", "f", ""}
PLATFORMS = ("", "prolific", "mturk")
MAX_ERRORS = 100  # per-line errors listed before the import gives up
ACTIVE_MS_MAX = 2**31 - 1


@dataclass(slots=True)
class _Record:
    """One record of a file with the helpers that read its fields."""

    rec: dict
    path: Path
    rid: str
    repairs: RepairLog
    where: Where  # "file, line N" for messages
    columns: Columns = None  # a CSV file's header; None for JSONL

    def refuse(self, why: str) -> ImportRefused:
        return ImportRefused(_("%(where)s: %(why)s", where=self.where, why=why))

    def missing(self, key: str) -> ImportRefused:
        """A required field without a value: once for the file when its CSV header lacks it."""
        if self.columns is not None and key not in self.columns:
            return missing_column(self.path.name, key, self.rec.get("type"))
        return self.refuse(_("%(key)s is missing", key=key))

    def text(self, key: str, *, required: bool = False) -> str:
        value = self.rec.get(key)
        if value.__class__ is str and value and "\x00" not in value:  # the common case, fast
            return value
        if value in (None, ""):
            if required:
                raise self.missing(key)
            return ""
        return as_text(value, what=key, file=self.path, record=self.rid, repairs=self.repairs)

    def flag(self, key: str) -> bool:
        value = self.rec.get(key, False)
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in TRUE | FALSE:
            return text in TRUE
        raise self.refuse(
            _("%(key)s must be true or false, not %(value)s", key=key, value=f"{value!r:.40}")
        )

    def time(self, key: str) -> dt.datetime | None:
        """ISO 8601; a time without an offset is read as UTC."""
        value = self.text(key)
        if not value:
            return None
        when = iso_time(value)
        if when is None:
            raise self.refuse(
                _(
                    "%(key)s must be an ISO 8601 time, not %(value)s",
                    key=key,
                    value=f"{value!r:.40}",
                )
            )
        return when

    def active_ms(self) -> int | None:
        value = self.rec.get("active_ms")
        if value in (None, ""):
            return None
        text = str(value).strip() if not isinstance(value, bool) else ""
        if not (
            text.isascii() and text.isdigit() and len(text) <= 10 and int(text) <= ACTIVE_MS_MAX
        ):
            raise self.refuse(
                _(
                    "active_ms must be a whole number of milliseconds, not %(value)s",
                    value=f"{value!r:.40}",
                )
            )
        return int(text)


RATER_KEYS = ("rater", "rater_kind", "rater_pool", "rater_platform")


def _rater(state: _State, r: _Record) -> specs.RaterSpec:
    """The record's rater; the same four cells give the same rater (checked once)."""
    key = tuple(map(r.rec.get, RATER_KEYS))
    spec = state.rater_cells.get(key)
    if spec is None:
        spec = state.rater_cells[key] = _new_rater(r)
        state.bundle.raters.setdefault(spec.name, spec)
    return spec


def _new_rater(r: _Record) -> specs.RaterSpec:
    name = r.text("rater", required=True).strip()
    kind = r.text("rater_kind").strip() or "human"
    if kind not in ("human", "judge"):
        raise r.refuse(_("rater_kind must be human or judge, not %(value)s", value=f"{kind!r:.40}"))
    pool = r.text("rater_pool").strip() or ("judge" if kind == "judge" else "onsite")
    if (kind == "judge") != (pool == "judge") or pool not in ("onsite", "crowd", "public", "judge"):
        raise r.refuse(
            _(
                "rater_pool %(pool)s does not fit rater_kind %(kind)s",
                pool=f"{pool!r:.40}",
                kind=repr(kind),
            )
        )
    platform = r.text("rater_platform").strip().lower()
    if platform not in PLATFORMS:
        raise r.refuse(
            _(
                "rater_platform must be prolific, mturk or empty, not %(value)s",
                value=f"{platform!r:.40}",
            )
        )
    return specs.RaterSpec(name, kind, pool, platform)


def _exposure(r: _Record, rater: specs.RaterSpec) -> dict[str, Any]:
    """The fields every rating record shares, as RatingSpec keyword arguments."""
    parse_status = r.text("parse_status").strip()
    if parse_status not in ("", "unparsed"):
        raise r.refuse(
            _(
                "parse_status must be empty or unparsed, not %(value)s",
                value=f"{parse_status!r:.40}",
            )
        )
    if parse_status and rater.kind != "judge":
        raise r.refuse(_("parse_status unparsed is for judge outputs (rater_kind judge)"))
    return {
        "rater": rater.name,
        "hint_shown": r.flag("hint_shown"),
        "repeat": r.flag("is_repeat"),
        "served_at": r.time("served_at"),
        "submitted_at": r.time("submitted_at"),
        "active_ms": r.active_ms(),
        "comment": r.text("comment"),
        "parse_status": parse_status,
        "raw_output": r.text("raw_output"),
        "where": r.where,
    }


@dataclass
class _State:
    bundle: specs.Bundle
    study: str | None
    rubric: str | None
    owner: Any = None  # who imports (None: the command line): the rubric resolves among theirs
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    star: dict[tuple, specs.RatingSpec] = field(default_factory=dict)
    rater_cells: dict[tuple, specs.RaterSpec] = field(default_factory=dict)

    @property
    def star_key(self) -> str:
        return self.study or f"{self.bundle.dataset} (imported ratings)"

    @property
    def pair_key(self) -> str:
        if self.study:
            return f"{self.study} (pairwise)"
        return f"{self.bundle.dataset} (imported pairwise ratings)"

    def star_rubric(self, r: _Record) -> dict[str, tuple[int, int]]:
        from annotation.importers.ownership import rubric_named

        if not self.rubric:  # a file-wide setting: said once per file, not on every line
            raise ImportRefused(
                _(
                    "%(file)s: star ratings need a rubric (“Rubric” in the import form, “rubric” "
                    "in the API, --rubric KEY on the command line), e.g. llmeval2",
                    file=r.path.name,
                )
            )
        if not self.ranges:
            rubric = rubric_named(self.owner, self.rubric, mode="star")
            if rubric is None:
                raise ImportRefused(_("unknown star rubric %(key)s", key=repr(self.rubric)))
            self.ranges = {c.key: (c.min_score, c.max_score) for c in rubric.criteria.all()}
            self.bundle.studies[self.star_key] = specs.StudySpec(
                name=self.star_key, mode="star", rubric=self.rubric
            )
        return self.ranges


def _question(state: _State, r: _Record, qid: str) -> None:
    kind = r.text("kind")
    if kind not in ("", "objective", "subjective"):
        raise r.refuse(_("kind must be objective, subjective or empty"))
    spec = specs.QuestionSpec(
        external_id=qid,
        text=r.text("text", required=True),
        task_type=r.text("task_type"),
        subcategory=r.text("subcategory"),
        kind=kind,
        answer_type=r.text("answer_type"),
        reference=r.text("reference"),
    )
    have = state.bundle.questions.get(qid)
    if have is not None and have.text != spec.text:
        raise r.refuse(
            _(
                "question id %(id)s is used again for another text: give each question its own id",
                id=repr(qid),
            )
        )
    state.bundle.add_question(spec, where=r.where)


def _response(state: _State, r: _Record, qid: str) -> None:
    # An empty answer is kept: it is what the model answered (the report counts them).
    state.bundle.responses.append(
        specs.ResponseSpec(
            question=qid,
            llm=r.text("llm", required=True),
            text=r.text("text"),
            external_id=r.text("response_id"),
            where=r.where,
        )
    )


def _scores_of(r: _Record) -> tuple[dict, set[str]]:
    scores = r.rec.get("scores")
    flagged = r.rec.get("out_of_range") or []
    if scores is None:
        crit = r.text("criterion")
        scores = {crit: r.rec.get("score")} if crit else {}
        flagged = [crit] if crit and r.flag("out_of_range") else []
    if not isinstance(scores, dict) or not isinstance(flagged, list):
        raise r.refuse(_("scores must be an object of criterion: value, out_of_range a list"))
    return scores, {str(c) for c in flagged}


def _star(state: _State, r: _Record, qid: str) -> None:
    ranges = state.star_rubric(r)
    rater = _rater(state, r)
    llm = r.text("llm", required=True)
    exposure = _exposure(r, rater)
    key = (qid, llm, rater.name, exposure["repeat"])
    spec = state.star.get(key)
    if spec is None:
        spec = specs.RatingSpec(study=state.star_key, question=qid, llm=llm, **exposure)
        state.star[key] = spec
        state.bundle.ratings.append(spec)
    else:  # another criterion of the same rating (CSV): its exposure must be the same
        differ = [k for k, v in exposure.items() if k != "where" and getattr(spec, k) != v]
        if differ:
            raise r.refuse(
                _(
                    "%(fields)s differ from the same rating's row in %(where)s",
                    fields=", ".join(differ),
                    where=spec.where,
                )
            )
    scores, flagged = _scores_of(r)
    for crit, value in scores.items():
        if crit not in ranges:
            raise r.refuse(
                _(
                    "rubric %(rubric)s has no criterion %(criterion)s",
                    rubric=repr(state.rubric),
                    criterion=f"{crit!r:.40}",
                )
            )
        if crit in spec.scores:
            raise r.refuse(
                _(
                    "a second score for %(criterion)s by %(rater)s on this answer",
                    criterion=repr(crit),
                    rater=repr(rater.name),
                )
            )
        lo, hi = ranges[crit]
        keep = crit in flagged
        spec.scores[crit] = check_score(
            value, lo=lo, hi=hi, criterion=crit, file=r.path, record=r.rid, keep_out_of_range=keep
        )
        if keep and lo <= spec.scores[crit] <= hi:
            raise r.refuse(
                _(
                    "out_of_range names %(criterion)s, whose score %(score)s is in range",
                    criterion=repr(crit),
                    score=spec.scores[crit],
                )
            )
        if keep:
            spec.out_of_range.add(crit)


def _pairwise(state: _State, r: _Record, qid: str) -> None:
    key = state.pair_key
    if key not in state.bundle.studies:
        state.bundle.studies[key] = specs.StudySpec(name=key, mode="pairwise", rubric="pairwise")
    rater = _rater(state, r)
    a, b = r.text("llm_a", required=True), r.text("llm_b", required=True)
    if a == b:
        raise r.refuse(_("llm_a and llm_b are the same model"))
    exposure = _exposure(r, rater)
    raw_choice = r.text("choice", required=not exposure["parse_status"]).strip().lower()
    choice = CHOICES.get(raw_choice, "") if raw_choice else ""
    if raw_choice and not choice:
        raise r.refuse(_("choice must be a, b, tie or both_bad"))
    left = r.text("left") or a
    if left not in (a, b):
        raise r.refuse(_("left must name llm_a or llm_b"))
    spec = specs.RatingSpec(
        study=key,
        question=qid,
        llm=a,
        other_llm=b,
        choice=choice,
        first_on_left=left == a,
        **exposure,
    )
    state.bundle.ratings.append(spec)


# The cells the common pairwise CSV row may fill (every other cell empty): _FastPairwise.
FAST_PAIRWISE = frozenset(
    ["type", "question_id", "llm_a", "llm_b", *RATER_KEYS, "choice", "submitted_at"]
)


class _FastPairwise:
    """The common pairwise CSV row (a question, two models, a known rater, a choice and maybe a
    time; every other cell empty), read straight from its cells: a million-row file is mostly
    such rows. `take` returns False for any other row, which then goes through `_one`, so the
    checks and messages are the same; a row `take` accepts is one `_one` would accept with the
    same RatingSpec."""

    def __init__(self, state: _State, header: list[str], name: str) -> None:
        self.state, self.name, self.study = state, name, state.pair_key
        at = {column: i for i, column in enumerate(header)}
        usable = len(at) == len(header) and {"question_id", "llm_a", "llm_b", "rater",
                                             "choice"} <= at.keys()  # fmt: skip
        self.width = len(header) if usable else -1  # -1: no row is taken
        self.kind, self.when = at["type"], at.get("submitted_at", -1)
        self.rater_at = [at.get(k, -1) for k in RATER_KEYS]
        named = ("question_id", "llm_a", "llm_b", "choice", *(k for k in RATER_KEYS if k in at))
        self.cells = itemgetter(*(at.get(k, 0) for k in named))
        others = [i for i, column in enumerate(header) if column not in FAST_PAIRWISE]
        self.others = itemgetter(*others) if others else None
        self.raters: dict[tuple, specs.RaterSpec] = {}  # by the rater's cells as given
        self.add, self.studies = state.bundle.ratings.append, state.bundle.studies

    def _rater(self, row: list[str], cells: tuple[str, ...]) -> specs.RaterSpec | None:
        key = tuple([(row[i] or None) if i >= 0 else None for i in self.rater_at])
        spec = self.state.rater_cells.get(key)  # known once `_one` read the rater's first row
        if spec is not None:
            self.raters[cells] = spec
        return spec

    def take(self, row: list[str], number: int) -> bool:
        if len(row) != self.width or row[self.kind] != "pairwise":
            return False
        if self.others is not None and any(self.others(row)):  # (one cell: its characters)
            return False
        named = self.cells(row)
        qid, a, b, raw = named[:4]
        qid, choice = qid.strip(), CHOICES.get(raw.strip().lower())
        if not (qid and a and b and choice) or a == b or "\x00" in qid + a + b + raw:
            return False
        cells = named[4:]  # the rater's
        rater = self.raters.get(cells) or self._rater(row, cells)
        if rater is None or self.study not in self.studies:
            return False
        when = row[self.when].strip() if self.when >= 0 else ""
        submitted = None
        if when:
            submitted = iso_time(when)
            if submitted is None:
                return False
        self.add(
            specs.RatingSpec(study=self.study, rater=rater.name, question=qid, llm=a, other_llm=b,
                             choice=choice, submitted_at=submitted,
                             where=LinePlace(self.name, number))
        )  # fmt: skip
        return True


HANDLERS = {"question": _question, "response": _response, "rating": _star, "pairwise": _pairwise}


def _one(state: _State, r: _Record) -> None:
    kind = str(r.rec.get("type") or "").strip()
    if kind not in TYPES:
        raise r.refuse(
            _(
                "type must be one of %(types)s, not %(value)s",
                types=", ".join(TYPES),
                value=f"{kind!r:.40}",
            )
        )
    if not KNOWN[kind].issuperset(r.rec):
        for key in sorted(set(r.rec) - KNOWN[kind]):
            r.repairs.add(f"ignored the unknown field {key!r} on a {kind} record", r.path, r.rid)
    qid = r.text("question_id").strip()
    if not qid:
        raise r.missing("question_id")
    HANDLERS[kind](state, r, qid)


def _file_records(state: _State, path: Path, fmt: str) -> Iterator[tuple[int, dict, Columns]]:
    """The records of a file for `_one`, with a CSV file's columns: all of a JSONL file's; a CSV
    file's rows that `_FastPairwise` does not take (it adds those to the bundle, in file order)."""
    if fmt == "jsonl":
        for number, rec in _jsonl_records(path):
            yield number, rec, None
        return
    fast = columns = None
    for header, number, row in _csv_rows(path):
        if fast is None:
            fast, columns = _FastPairwise(state, header, path.name), frozenset(header)
        if not fast.take(row, number):
            yield number, {k: v for k, v in zip(header, row, strict=False) if v}, columns


def parse(paths: list[Path], repairs: RepairLog, opts: Options, *, fmt: str) -> specs.Bundle:
    """Every record is checked; the errors of up to MAX_ERRORS records are listed together."""
    if not opts.dataset:
        raise ImportRefused(_("the generic formats need --dataset NAME"))
    state = _State(opts.bundle(opts.dataset, "", "import"), opts.study, opts.rubric, opts.owner)
    errors: list[str] = []
    said: set[str] = set()
    for path in map(Path, paths):
        name = path.name
        records = progress(_file_records(state, path, fmt), total=None, desc=name,
                           enabled=opts.progress)  # fmt: skip
        for number, rec, columns in records:
            where = LinePlace(name, number)
            try:
                _one(state, _Record(rec, path, f"line {number}", repairs, where, columns))
            except ImportRefused as exc:
                if str(exc) in said:  # a file-wide problem (e.g. an unknown rubric): once
                    continue
                said.add(str(exc))
                errors.append(exc.args[0])
                if len(errors) >= MAX_ERRORS:
                    break
    if errors:
        first = errors[0]
        if len(errors) > 1:
            first = _("%(error)s (and %(n)s more)", error=first, n=len(errors) - 1)
        raise ImportRefused(first, errors=errors)
    return state.bundle
