"""Strict parsing of what annotator browsers and crowd platforms send.

Python's int() takes far more than a form should: Unicode digits ('٣' is 3), underscores
('1_0'), surrounding spaces, and it raises on superscripts ('²' passes isdigit()) and on strings
longer than 4,300 digits. PostgreSQL refuses NUL in text. Everything here accepts the plain
form only and says no to the rest, so the views answer 400 instead of storing odd values or
failing with a 500.
"""

from __future__ import annotations

import re

_ASCII_INT = re.compile(r"[0-9]{1,9}")
_PUBLIC_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")
MAX_EXTERNAL_ID = 200


def small_int(raw: object) -> int | None:
    """A non-negative whole number written in ASCII digits (at most 9), else None."""
    if isinstance(raw, str) and _ASCII_INT.fullmatch(raw):
        return int(raw)
    return None


def is_public_id(raw: str) -> bool:
    """Could this be a Study.public_id (token_urlsafe)? Anything else is not a study."""
    return bool(_PUBLIC_ID.fullmatch(raw))


def external_id(raw: str, *, required: bool = False) -> str:
    """A crowd platform's id (worker, study, session, assignment, HIT): printable text of at most
    200 characters, spaces at the ends dropped. Raises ValueError with the reason."""
    value = (raw or "").strip()
    if not value:
        if required:
            raise ValueError("empty")
        return ""
    if len(value) > MAX_EXTERNAL_ID:
        raise ValueError("too long")
    if not value.isprintable():
        raise ValueError("control characters")
    return value
