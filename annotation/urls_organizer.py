from __future__ import annotations

from django.urls import path

from annotation import views_organizer as v

app_name = "organize"

urlpatterns = [
    path("organize/studies/", v.study_list, name="studies"),
    path("organize/studies/new/", v.study_new, name="study_new"),
    path("organize/studies/<int:study_id>/", v.study_detail, name="study"),
    path("organize/studies/<int:study_id>/<str:action>/", v.study_status, name="study_status"),
    path("organize/annotators/", v.annotators, name="annotators"),
]
