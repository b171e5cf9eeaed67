"""Two requests that write the same unique value at the same moment: a 409, never a 500.

A double click on *Create*, two tabs or a retrying script can send the same new name twice.
Every form, serializer and model checks that the name is free, but both requests can pass that
check before either commits; the database's unique constraint then refuses the second with an
IntegrityError. The services write in one transaction, which the error has rolled back, so
nothing of the refused request is stored: it is a conflict (409) with a message, on the pages
(``ConflictMiddleware``) and on the API (``config.drf.exception_handler``).

Only a unique or foreign-key violation is such a conflict (the same value written twice; a row
deleted while another request pointed at it). Any other IntegrityError (NOT NULL, CHECK) is a
bug of ours, not the user's: it is not dressed as a conflict but left to Django's 500 handling.
The 409 is a safety net under the checks, so each one is logged at ERROR with its traceback: a
unique violation from a bug shows in the error log instead of hiding behind "try again".
See docs/decisions.md (Conflicts).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext_lazy as _

logger = logging.getLogger(__name__)

CONFLICT = _(
    "This conflicts with something saved at the same moment (the same name twice: a double "
    "click, another tab?), so nothing was written by this request. Reload the page and try again."
)


# SQLSTATE of a unique and a foreign-key violation (PostgreSQL); SQLite says it in words.
CONFLICT_STATES = frozenset({"23505", "23503"})
SQLITE_CONFLICTS = ("UNIQUE constraint failed", "FOREIGN KEY constraint failed")


def is_conflict(exc: IntegrityError) -> bool:
    """Whether the database refused a value another write holds or removed (unique, foreign
    key), as two simultaneous requests do; not a NOT NULL or CHECK violation (a bug)."""
    state = getattr(exc, "sqlstate", None)  # annotation.pgcopy.MissingReferences
    cause = exc.__cause__
    state = state or getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    if state:
        return state in CONFLICT_STATES
    return str(exc).startswith(SQLITE_CONFLICTS)


def log_conflict(request: HttpRequest | None, exc: IntegrityError) -> None:
    path = getattr(request, "path", "?")
    logger.error(
        "Refused a write that conflicts with a simultaneous one on %s: %s",
        path,
        exc,
        exc_info=(type(exc), exc, exc.__traceback__),
    )


class ConflictMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, IntegrityError) or not is_conflict(exception):
            return None  # not a conflict: Django's 500 handling logs it as the bug it is
        log_conflict(request, exception)
        return render(request, "409.html", {"message": CONFLICT}, status=409)
