"""Upper bounds on an organizer's numbers and the shape of a study's question selection.

One place for the limits the organizer form (annotation/forms.py) and the API serializers
(annotation/api/serializers.py) both apply, so a value the database cannot hold (a quota of 10**30,
a PositiveSmallIntegerField of 40,000) is a field error, never a database error. The bounds are far
above any real study and below every column's range.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

MAX_RATINGS_PER_ITEM = 50
MAX_QUOTA = 1_000_000  # items per annotator
MAX_RESERVATION_TIMEOUT = 7 * 24 * 3600  # seconds
MAX_PAIRS_PER_QUESTION = 10_000
MAX_QUESTIONS = 10_000_000
MAX_SEED = 2**63 - 1

SELECTION_LISTS = ("task_types", "kinds", "llms", "question_ids")
SELECTION_KEYS = (*SELECTION_LISTS, "max_questions")
MAX_SELECTION_ENTRIES = 100_000
MAX_SELECTION_TEXT = 500


def _check_list(key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_SELECTION_ENTRIES:
        raise ValidationError(
            _("selection.%(key)s must be a list of at most %(n)d texts.")
            % {"key": key, "n": MAX_SELECTION_ENTRIES}
        )
    for entry in value:
        if not isinstance(entry, str) or len(entry) > MAX_SELECTION_TEXT or "\x00" in entry:
            raise ValidationError(
                _(
                    "selection.%(key)s holds an entry that is not a text of at most "
                    "%(n)d characters without NUL."
                )
                % {"key": key, "n": MAX_SELECTION_TEXT}
            )
    return value


def _check_max_questions(value: Any) -> int:
    # bool is an int in Python; JSON true is not a count.
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_QUESTIONS:
        raise ValidationError(
            _("selection.max_questions must be a whole number from 1 to %(n)d.")
            % {"n": MAX_QUESTIONS}
        )
    return value


def clean_selection(value: Any) -> dict[str, Any]:
    """The selection if it is an object with known keys and well-formed values; else a
    ValidationError naming what is wrong."""
    if not isinstance(value, dict):
        raise ValidationError(_("selection must be an object."))
    unknown = sorted(str(k) for k in value if k not in SELECTION_KEYS)
    if unknown:
        keys = ", ".join(k.replace(chr(0), "") for k in unknown)[:200]
        raise ValidationError(
            _("selection has unknown keys (%(keys)s); use %(allowed)s.")
            % {"keys": keys, "allowed": ", ".join(SELECTION_KEYS)}
        )
    cleaned: dict[str, Any] = {}
    for key, entry in value.items():
        if entry in (None, [], ""):
            continue
        cleaned[key] = (
            _check_max_questions(entry) if key == "max_questions" else _check_list(key, entry)
        )
    return cleaned


def parse_id(text: object) -> int | None:
    """A row id typed in a URL or query: plain ASCII digits that fit a bigint, else None.

    ``str.isdigit`` is not enough: '²' and '٣' are digits to it, and ``int('²')`` raises, which
    was a 500 wherever a query parameter went through ``isdigit`` then ``int``.
    """
    text = str(text).strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        return None
    return int(text)


def check_ranges(**values: tuple[int, int, int]) -> None:
    """ValueError naming the first of `name=(value, lowest, highest)` out of its range."""
    for name, (value, lo, hi) in values.items():
        if not lo <= value <= hi:
            raise ValueError(f"{name} must be between {lo} and {hi}.")
