from __future__ import annotations

from django.urls import path

from annotation import api_engine as api

# Mounted at /api/ next to the data and study-definition API.
urlpatterns = [
    path("studies/<int:study_id>/launch/", api.StudyLaunchApi.as_view(), name="api-study-launch"),
    path("studies/<int:study_id>/pause/", api.StudyPauseApi.as_view(), name="api-study-pause"),
    path("studies/<int:study_id>/close/", api.StudyCloseApi.as_view(), name="api-study-close"),
    path(
        "studies/<int:study_id>/progress/",
        api.StudyProgressApi.as_view(),
        name="api-study-progress",
    ),
    path("studies/<int:study_id>/links/", api.StudyLinksApi.as_view(), name="api-study-links"),
    path("annotators/", api.OnsiteAnnotatorsApi.as_view(), name="api-annotators"),
]
