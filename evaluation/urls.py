from __future__ import annotations

from django.urls import include, path

from evaluation import api, views

pages = [
    path("judges/", views.judge_list, name="list"),
    path("judges/new/", views.judge_new, name="new"),
    path("judges/<int:judge_id>/edit/", views.judge_edit, name="edit"),
    path("judges/templates/", views.template_list, name="templates"),
    path("judges/studies/<int:study_id>/run/", views.run_start, name="run_start"),
    path("judges/runs/<int:run_id>/", views.run_detail, name="run"),
    path("judges/runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("judges/runs/<int:run_id>/resume/", views.run_resume, name="run_resume"),
    path("judges/runs/<int:run_id>/reparse/", views.run_reparse, name="run_reparse"),
]

api_urls = [
    path("api/judges/", api.JudgeListApi.as_view(), name="judges"),
    path("api/judges/create/", api.JudgeCreateApi.as_view(), name="judge_create"),
    path("api/judges/templates/", api.TemplateListApi.as_view(), name="templates"),
    path("api/judges/templates/create/", api.TemplateCreateApi.as_view(), name="template_create"),
    path("api/judges/runs/", api.RunListApi.as_view(), name="runs"),
    path("api/judges/runs/start/", api.RunStartApi.as_view(), name="run_start"),
    path("api/judges/runs/<int:run_id>/", api.RunDetailApi.as_view(), name="run"),
    path(
        "api/judges/runs/<int:run_id>/failures/", api.RunFailuresApi.as_view(), name="run_failures"
    ),
    path("api/judges/runs/<int:run_id>/cancel/", api.RunCancelApi.as_view(), name="run_cancel"),
    path("api/judges/runs/<int:run_id>/resume/", api.RunResumeApi.as_view(), name="run_resume"),
    path("api/judges/runs/<int:run_id>/reparse/", api.RunReparseApi.as_view(), name="run_reparse"),
]

urlpatterns = [
    path("", include((pages, "judges"))),
    path("", include((api_urls, "judges_api"))),
]
