from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotation.models import Study
from annotation.permissions import is_organizer, studies_for


def home(request: HttpRequest) -> HttpResponse:
    """Landing page: organizers see their studies, everyone sees the studies open to them."""
    organizer = is_organizer(request.user)
    context = {
        "is_organizer": organizer,
        "my_studies": studies_for(request.user)[:50] if organizer else [],
        "public_studies": Study.objects.filter(status=Study.Status.LIVE, admit_public=True),
    }
    return render(request, "home.html", context)
