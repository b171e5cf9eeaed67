"""What a file holds, format-neutral and validated in memory: questions, responses, raters,
studies and ratings as plain dataclasses. A format module's parse() builds a `Bundle`; the writer
(writer.py) stores it. Nothing here touches the database, so a bundle can be checked alone.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from django.utils.functional import lazy
from django.utils.translation import gettext

from annotation.models import PairChoice

# A record's place ("file, line 12 (question_id 7)"; "record 3 (question Q1, LLM x)"): its words
# in the reader's language, when a message is shown. Only a word that opens the place or one of
# its parts (after ", " or "("): "line 12", "record 3", "dialog ", "question ".
_PLACE_WORDS = re.compile(
    r"(?:^|(?<=, )|(?<=\())(?:(line|record) (\d+)\b|(dialog|question) (?=\S))"
)


def _place_word(m: re.Match[str]) -> str:
    if m.group(1) == "line":
        return gettext("line %(n)s") % {"n": m.group(2)}
    if m.group(1) == "record":
        return gettext("record %(n)s") % {"n": m.group(2)}
    return (gettext("dialog") if m.group(3) == "dialog" else gettext("question")) + " "


class Place(str):
    """A record's place in a message, built from our words (``template``) and the user's text
    (``values``: file names, ids), which stay as given: only the template's words are translated,
    so a file named "line 3.jsonl" or "question bank.csv" keeps its name in every language.
    Reads as the plain text ("line 3.jsonl, line 5") wherever a str is expected."""

    template: str
    values: dict[str, Any]

    def __new__(cls, template: str, **values: Any) -> Place:
        self = super().__new__(cls, template % values)
        self.template, self.values = template, values
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (_place_from, (self.template, self.values))

    def shown(self) -> str:
        """In the reader's language: the template's words translated, the values as given."""
        words = _PLACE_WORDS.sub(_place_word, self.template)
        return words % {
            k: _shown(v) if isinstance(v, (Place, LinePlace)) else v for k, v in self.values.items()
        }


class LinePlace:
    """ "file, line N": the place of one line of a file, for the importers' per-line loops.

    It reads like `place(file, f"line {n}")` and is shown the same way (the file name as given,
    "line" translated), but it is a small object with the text built only when a message needs
    it: two str subclasses per line cost about 11 s of a million-row import."""

    __slots__ = ("file", "line")

    def __init__(self, file: str, line: int) -> None:
        self.file, self.line = file, line

    def __str__(self) -> str:
        return f"{self.file}, line {self.line}"

    def __repr__(self) -> str:
        return f"LinePlace({self.file!r}, {self.line})"

    def __eq__(self, other: object) -> bool:
        return str(self) == str(other) if isinstance(other, (str, LinePlace)) else NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def shown(self) -> str:
        """In the reader's language: "line" translated, the file name as given."""
        return f"{self.file}, " + gettext("line %(n)s") % {"n": self.line}


# A record's place as the importers pass it: a Place, a LinePlace or plain text of ours.
Where = str | LinePlace


def _place_from(template: str, values: dict[str, Any]) -> Place:
    return Place(template, **values)


def our_words(text: str | Place) -> Place:
    """A place part written by the importer ("line 5", "record 3"): all of it may be put in
    words. A Place (our words with the user's values) is kept."""
    return text if isinstance(text, Place) else Place(str(text).replace("%", "%%"))


def place(file: str, record: str | Place = "") -> Place:
    """ "file, record" (or the file alone): the file name as given, the record's words
    translated (``record``: our words, or a Place holding the user's ids)."""
    if not record:
        return Place("%(file)s", file=file)
    return Place("%(file)s, %(record)s", file=file, record=our_words(record))


def _shown(where: Any) -> str:
    if isinstance(where, (Place, LinePlace)):
        return where.shown()
    # Plain text: all of it is a place written by the importer.
    return _PLACE_WORDS.sub(_place_word, str(where))


def _message(text: str, values: dict[str, Any]) -> str:
    said = gettext(text)
    if not values:
        return said
    shown = {k: _shown(v) if k.endswith("where") else str(v) for k, v in values.items()}
    return said % shown


_lazy_message = lazy(_message, str)


def message(text: str, **values: Any) -> str:
    """An importer's message, put in words when it is shown: in the reader's language on the
    import page and in the API, in English from `manage.py import_dataset` (commands run in
    English). The modules import it as ``_`` so that makemessages collects ``text``; the
    values are named (``%(where)s``, or any name ending in ``where``, is a record's place: its
    words are translated too)."""
    return _lazy_message(text, values)


_ = message  # makemessages collects _("..."); see message()


class ImportRefused(Exception):
    """A file cannot be imported as it is; the message names the file and the record.

    `errors` lists every problem found (one line each, naming file and line) when the format
    checks its records one by one (the generic formats); else just the message. Messages are
    lazy (``message``): ``str()`` gives them in the active language."""

    def __init__(self, message: str, *, errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or [message]


@dataclass(slots=True)
class QuestionSpec:
    external_id: str
    text: str
    task_type: str = ""
    subcategory: str = ""
    kind: str = ""
    answer_type: str = ""
    reference: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ResponseSpec:
    question: str  # question external id
    llm: str
    text: str  # may be empty: an empty answer is data too (flagged by its length 0)
    external_id: str = ""
    where: Where = ""  # "file, record" for messages


@dataclass
class RaterSpec:
    name: str
    kind: str  # human | judge
    pool: str  # onsite | crowd | public | judge
    platform: str = ""  # prolific | mturk | ""


@dataclass
class StudySpec:
    name: str
    mode: str  # star | pairwise
    rubric: str  # rubric key
    description: str = ""


@dataclass(slots=True)
class RatingSpec:
    study: str  # StudySpec key in the bundle
    rater: str  # RaterSpec name
    question: str
    llm: str  # the rated response (star) or the response shown as model 1 (pairwise)
    other_llm: str = ""  # pairwise: the second response
    scores: dict[str, int] = field(default_factory=dict)  # criterion key -> value (star)
    out_of_range: set[str] = field(default_factory=set)  # criterion keys kept as given
    choice: str = ""  # pairwise, relative to (llm, other_llm): "first", "second", "tie", "both_bad"
    first_on_left: bool = True  # pairwise: llm's response was shown on the left
    hint_shown: bool = False
    repeat: bool = False  # a second scoring of the same item by the same rater
    served_at: dt.datetime | None = None
    submitted_at: dt.datetime | None = None  # None: the import's time
    active_ms: int | None = None
    comment: str = ""
    parse_status: str = ""  # "" or "unparsed" (a judge output that could not be read)
    raw_output: str = ""
    where: Where = ""

    def check(self, mode: str) -> None:
        """The rating's own consistency, before any database work."""
        if self.parse_status == "unparsed":
            if self.scores or self.choice:
                raise ImportRefused(
                    _("%(where)s: an unparsed rating carries no score or choice", where=self.where)
                )
            return
        if self.parse_status:
            raise ImportRefused(
                _("%(where)s: parse_status must be empty or 'unparsed'", where=self.where)
            )
        if mode == "pairwise" and self.choice not in ("first", "second", "tie", "both_bad"):
            raise ImportRefused(
                _(
                    "%(where)s: unknown pairwise choice %(choice)s",
                    where=self.where,
                    choice=repr(self.choice),
                )
            )
        if mode == "star" and not self.scores:
            raise ImportRefused(_("%(where)s: a star rating without any score", where=self.where))
        if self.out_of_range - set(self.scores):
            raise ImportRefused(
                _("%(where)s: out_of_range names a criterion without a score", where=self.where)
            )
        if self.served_at and self.submitted_at and self.served_at > self.submitted_at:
            raise ImportRefused(_("%(where)s: served_at is after submitted_at", where=self.where))


@dataclass
class Bundle:
    dataset: str
    dataset_description: str = ""
    dataset_source: str = ""
    questions: dict[str, QuestionSpec] = field(default_factory=dict)
    responses: list[ResponseSpec] = field(default_factory=list)
    raters: dict[str, RaterSpec] = field(default_factory=dict)
    studies: dict[str, StudySpec] = field(default_factory=dict)
    ratings: list[RatingSpec] = field(default_factory=list)

    def add_question(self, spec: QuestionSpec, *, where: Where) -> QuestionSpec:
        """Keep the first spec of a question id; a later spec must not contradict it."""
        have = self.questions.get(spec.external_id)
        if have is None:
            self.questions[spec.external_id] = spec
            return spec
        for attr in ("task_type", "kind", "reference"):
            mine, theirs = getattr(spec, attr), getattr(have, attr)
            if mine and theirs and mine != theirs:
                raise ImportRefused(
                    _(
                        "%(where)s: question %(id)s has %(field)s %(mine)s here but %(theirs)s "
                        "earlier",
                        where=where,
                        id=repr(spec.external_id),
                        field=attr,
                        mine=repr(mine),
                        theirs=repr(theirs),
                    )
                )
        return have

    def _check_lengths(self) -> None:
        """Names and ids fit their columns (PostgreSQL would refuse them mid-import)."""
        checks: list[tuple[str, str, Where | None, int]] = [
            (_("dataset name"), self.dataset, None, 200)
        ]
        for q in self.questions.values():
            where = Place("question %(id)s", id=repr(q.external_id[:40]))
            checks += [(_("question id"), q.external_id, where, 200)]
            checks += [
                (_("task type"), q.task_type, where, 100),
                (_("subcategory"), q.subcategory, where, 100),
            ]
            checks += [(_("answer type"), q.answer_type, where, 50)]
        for r in self.responses:
            checks += [
                (_("LLM name"), r.llm, r.where, 200),
                (_("response id"), r.external_id, r.where, 200),
            ]
        checks += [(_("rater name"), r.name, None, 200) for r in self.raters.values()]
        checks += [(_("study name"), s.name, None, 200) for s in self.studies.values()]
        for what, value, at, limit in checks:
            if len(value) > limit:
                said = _("the %(what)s is longer than %(n)s characters", what=what, n=limit)
                raise ImportRefused(_("%(where)s: %(why)s", where=at, why=said) if at else said)

    def validate(self) -> None:
        """Everything that can be checked without the database: names fit their columns, every
        rating names a known study and rater and is consistent in itself. (Whether a repeat's
        first rating exists is the writer's check: it may be stored already.)"""
        self._check_lengths()
        for spec in self.ratings:
            study = self.studies.get(spec.study)
            if study is None or spec.rater not in self.raters:
                raise ImportRefused(_("%(where)s: unknown study or rater", where=spec.where))
            spec.check(study.mode)


__all__ = [
    "Bundle",
    "ImportRefused",
    "QuestionSpec",
    "RaterSpec",
    "RatingSpec",
    "ResponseSpec",
    "StudySpec",
]


@cache  # eight answers, asked once per rating
def _canonical(choice: str, first_is_a: bool) -> str:
    # The first response of the file's pair reads as if it had been shown on the left.
    shown = {"first": "left", "second": "right"}.get(choice, choice)
    return PairChoice.from_shown(shown, left_is_a=first_is_a)


def canonical_choice(choice: str, first_is_a: bool, where: Where) -> str:
    """A choice relative to (first, second) as shown in the file -> canonical A/B."""
    if choice == "":
        return choice
    if choice in ("first", "second", "tie", "both_bad"):
        return _canonical(choice, first_is_a)
    raise ImportRefused(
        _("%(where)s: unknown pairwise choice %(choice)s", where=where, choice=repr(choice))
    )
