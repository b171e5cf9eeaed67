"""The data API, mounted at /api/ (annotation/urls.py). Study lifecycle, progress and annotators
live in annotation/urls_api_engine.py."""

from __future__ import annotations

from django.urls import path

from annotation.api import views as v

urlpatterns = [
    path("datasets/", v.DatasetList.as_view(), name="api-datasets"),
    path("datasets/<int:pk>/", v.DatasetDetail.as_view(), name="api-dataset"),
    path("questions/", v.QuestionList.as_view(), name="api-questions"),
    path("questions/<int:pk>/", v.QuestionDetail.as_view(), name="api-question"),
    path("responses/", v.ResponseList.as_view(), name="api-responses"),
    path("responses/<int:pk>/", v.ResponseDetail.as_view(), name="api-response"),
    path("llms/", v.LLMList.as_view(), name="api-llms"),
    path("rubrics/", v.RubricList.as_view(), name="api-rubrics"),
    path("rubrics/<slug:key>/", v.RubricDetail.as_view(), name="api-rubric"),
    path("studies/", v.StudyListCreate.as_view(), name="api-studies"),
    path("studies/<int:pk>/", v.StudyDetailUpdate.as_view(), name="api-study"),
    path("studies/<int:pk>/export/", v.StudyExport.as_view(), name="api-study-export"),
    path("imports/", v.ImportListCreate.as_view(), name="api-imports"),
]
