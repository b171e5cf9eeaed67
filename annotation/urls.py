from __future__ import annotations

from django.urls import include, path

# Split by audience so the parts can grow independently:
# the REST API for organizers, organizer pages, and the annotator-facing pages.
urlpatterns = [
    path("api/", include("annotation.urls_api")),
    path("", include("annotation.urls_organizer")),
    path("", include("annotation.urls_annotator")),
]
