"""Leaving a page that htmx asked for."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it (for type annotations of views)."""

    htmx: HtmxDetails


def leave(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """Go to another page. An htmx request gets a client-side redirect (HX-Redirect): a plain 302
    would be followed by htmx and the whole next page swapped into the fragment's place."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)
