from __future__ import annotations

from django.urls import path

from annotation import entry
from annotation import views_annotator as v

app_name = "annotate"

# Annotator URLs carry only Study.public_id and Assignment.public_id (a UUID).
urlpatterns = [
    path("annotate/", v.my_studies, name="my_studies"),
    path("s/<str:study_pid>/", v.study_start, name="study"),
    path("s/<str:study_pid>/next/", v.study_next, name="next"),
    path("s/<str:study_pid>/done/", entry.study_done, name="done"),
    path("s/<str:study_pid>/previous/", v.study_previous, name="previous_latest"),
    path("s/<str:study_pid>/crowd/", entry.crowd_entry, name="crowd"),
    path("s/<str:study_pid>/join/", entry.public_join, name="join"),
    path("a/<uuid:assignment_pid>/", v.assignment_page, name="assignment"),
    path("a/<uuid:assignment_pid>/skip/", v.assignment_skip, name="skip"),
    path("a/<uuid:assignment_pid>/previous/", v.assignment_previous, name="previous"),
    path("a/<uuid:assignment_pid>/lease/", v.assignment_lease, name="lease"),
    path("invite/<str:uidb64>/<str:token>/", v.invite_accept, name="invite"),
]
