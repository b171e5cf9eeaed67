"""Two requests that write the same unique value at the same moment: a 409, never a 500.

A double click on *Create*, two tabs or a retrying script can send the same new name twice.
Every form, serializer and model checks that the name is free, but both requests can pass that
check before either commits; the database's unique constraint then refuses the second with an
IntegrityError. The services write in one transaction, which the error has rolled back, so
nothing of the refused request is stored: it is a conflict (409) with a message, on the pages
(``ConflictMiddleware``) and on the API (``config.drf.exception_handler``).
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


def log_conflict(request: HttpRequest | None, exc: IntegrityError) -> None:
    path = getattr(request, "path", "?")
    logger.warning("Refused a write that conflicts with a simultaneous one on %s: %s", path, exc)


class ConflictMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, IntegrityError):
            return None
        log_conflict(request, exception)
        return render(request, "409.html", {"message": CONFLICT}, status=409)
