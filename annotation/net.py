"""The client's network address, one rule for every caller (rate limits, per-address caps)."""

from __future__ import annotations

from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """The address the request came from.

    Today this is REMOTE_ADDR. Behind a reverse proxy that is the proxy's address; the trusted-proxy
    setting that reads X-Forwarded-For belongs here, so every caller gets it at once.
    """
    return request.META.get("REMOTE_ADDR", "") or ""
