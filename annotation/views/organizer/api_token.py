"""An organizer's API token from the organizer pages: an organizer without a shell or the admin
(``create_organizer`` makes no staff account) can still call the API. The key is shown once,
in the answer to the POST that makes it; the page never shows it again (a new token replaces
the old one), and no answer of this page is cached."""

from __future__ import annotations

from typing import cast

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods
from rest_framework.authtoken.models import Token

from annotation.permissions import organizer_required


@never_cache
@organizer_required
@require_http_methods(["GET", "POST"])
def api_token(request: HttpRequest) -> HttpResponse:
    user = cast(User, request.user)  # organizer_required: signed in
    token = Token.objects.filter(user=user).first()
    new_key = None
    if request.method == "POST":
        with transaction.atomic():
            Token.objects.filter(user=user).delete()
            token = Token.objects.create(user=user)
        new_key = token.key
    context = {
        "token": token,
        "new_key": new_key,
        "studies_url": settings.SITE_URL.rstrip("/") + reverse("api-studies"),
    }
    return render(request, "annotation/organizer/api_token.html", context)
