"""Sign-in with a cap on failed attempts per client address.

Django's login page and the admin's sign-in try every password they are sent, so a stranger could
guess an organizer's password at the speed of the server. Failed sign-ins are counted per client
address (annotation.net.limit_key: an IPv6 client by its /64) and hour; past
LOGIN_FAILURES_PER_HOUR the form refuses before any password is checked, with a message saying
when to come back (HTTP 429 on the login page). A correct password does not reset the count, and
the cap is per address, not per account: a stranger cannot lock an organizer out by failing in
their name from elsewhere.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.utils.translation import ngettext

from annotation.net import limit_key
from config.redis_cache import hit

TOO_MANY = "too_many_failures"


def _key(request) -> str:
    return f"login-failed:{limit_key(request)}:{int(time.time() // 3600)}"


def _cap() -> int:
    return int(getattr(settings, "LOGIN_FAILURES_PER_HOUR", 30))


def refused(request) -> bool:
    """This address has failed to sign in as often as an hour allows."""
    cap = _cap()
    return request is not None and cap > 0 and int(cache.get(_key(request)) or 0) >= cap


class LimitedLoginMixin(AuthenticationForm):
    """clean() refuses a capped address before the password is checked, and counts a failure."""

    def clean(self) -> dict[str, Any]:
        if refused(self.request):
            minutes = max(1, round((3600 - time.time() % 3600) / 60))
            message = ngettext(
                "Too many failed sign-ins from your address. Try again in %(minutes)d minute.",
                "Too many failed sign-ins from your address. Try again in %(minutes)d minutes.",
                minutes,
            )
            raise ValidationError(message % {"minutes": minutes}, code=TOO_MANY)
        try:
            return super().clean()
        except ValidationError:
            if self.request is not None and _cap() > 0:
                hit(_key(self.request), 3700)
            raise


class LimitedAuthenticationForm(LimitedLoginMixin, AuthenticationForm):
    pass


class LimitedAdminAuthenticationForm(LimitedLoginMixin, AdminAuthenticationForm):
    pass


class LoginView(auth_views.LoginView):
    form_class = LimitedAuthenticationForm

    def form_invalid(self, form) -> HttpResponse:
        response = super().form_invalid(form)
        if any(e.code == TOO_MANY for e in form.non_field_errors().as_data()):
            response.status_code = 429
        return response
