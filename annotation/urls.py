from __future__ import annotations

from django.urls import include, path

# Split by audience so the parts can grow independently: the REST API for organizers (data and
# study definitions; the assignment engine's study lifecycle and progress), organizer pages, and
# the annotator-facing pages.
urlpatterns = [
    path("api/", include("annotation.urls_api")),
    path("api/", include("annotation.urls_api_engine")),
    path("", include("annotation.urls_organizer")),
    path("", include("annotation.urls_annotator")),
]
