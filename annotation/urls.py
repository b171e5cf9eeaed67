"""Every URL of the annotation app, in one place, by audience:

- ``/api/``: the REST API for organizers: the data API (annotation/api/data.py: datasets,
  questions, responses, rubrics, studies, imports, exports) and the engine API (annotation/api/
  engine.py: launch, pause, close, progress, links, onsite annotators);
- ``/organize/``: organizer pages (annotation/views/organizer/), namespace ``organize``;
- annotator pages (annotation/views/annotator.py, entry.py), namespace ``annotate``. Annotator URLs
  carry only Study.public_id and Assignment.public_id (a UUID).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.urls import URLPattern, include, path
from rest_framework.views import APIView

from annotation.api import checks as checks_api
from annotation.api import data, engine
from annotation.views import annotator as v
from annotation.views import entry
from annotation.views.organizer import (
    annotators,
    api_token,
    downloads,
    imports,
    llms,
    quality,
    rubrics,
    studies,
)

# GET on a read-only resource: its list, or one of it.
LIST: dict[str, Any] = {"get": "list"}
ONE: dict[str, Any] = {"get": "retrieve"}
data_api = [
    path("datasets/", data.Datasets.as_view(LIST), name="api-datasets"),
    path("datasets/<int:pk>/", data.Datasets.as_view(ONE), name="api-dataset"),
    path("questions/", data.Questions.as_view(LIST), name="api-questions"),
    path("questions/<int:pk>/", data.Questions.as_view(ONE), name="api-question"),
    path("responses/", data.Responses.as_view(LIST), name="api-responses"),
    path("responses/<int:pk>/", data.Responses.as_view(ONE), name="api-response"),
    path("llms/", data.LLMs.as_view(LIST), name="api-llms"),
    path("rubrics/", data.Rubrics.as_view(LIST), name="api-rubrics"),
    path("rubrics/<slug:key>/", data.Rubrics.as_view(ONE), name="api-rubric"),
    path("studies/", data.StudyListCreate.as_view(), name="api-studies"),
    path("studies/<int:pk>/", data.StudyDetailUpdate.as_view(), name="api-study"),
    path("studies/<int:pk>/export/", data.StudyExport.as_view(), name="api-study-export"),
    path("imports/", data.ImportListCreate.as_view(), name="api-imports"),
]


def routes(
    prefix: str, specs: list[tuple[str, Callable[..., Any] | type[APIView], str]]
) -> list[URLPattern]:
    """URL patterns under one prefix, from (rest of the path, view, url name); an API view is
    given as its class."""
    return [path(prefix + rest, _callable(view), name=name) for rest, view, name in specs]


def _callable(view: Callable[..., Any] | type[APIView]) -> Callable[..., Any]:
    if isinstance(view, type) and issubclass(view, APIView):
        return view.as_view()
    return view


# The engine's (lifecycle, progress, links) and the quality checks' endpoints of one study.
study_api = routes(
    "studies/<int:study_id>/",
    [
        ("launch/", engine.StudyLaunchApi, "api-study-launch"),
        ("pause/", engine.StudyPauseApi, "api-study-pause"),
        ("close/", engine.StudyCloseApi, "api-study-close"),
        ("progress/", engine.StudyProgressApi, "api-study-progress"),
        ("links/", engine.StudyLinksApi, "api-study-links"),
        ("checks/", checks_api.StudyChecksApi, "api-checks"),
        ("checks/gold/", checks_api.GoldChecksApi, "api-checks-gold"),
        ("checks/attention/", checks_api.AttentionCheckApi, "api-checks-attention"),
        ("quality/", checks_api.StudyQualityApi, "api-study-quality"),
        ("exclusions/", checks_api.ExclusionsApi, "api-study-exclusions"),
    ],
)
annotator_api = [
    path("annotators/", engine.OnsiteAnnotatorsApi.as_view(), name="api-annotators"),
]

organizer_pages = [
    path("organize/studies/", studies.study_list, name="studies"),
    path("organize/studies/new/", studies.study_new, name="study_new"),
    *routes(
        "organize/studies/<int:study_id>/",
        [
            ("", studies.study_detail, "study"),
            ("edit/", studies.study_edit, "study_edit"),
            ("download/<str:what>.<str:fmt>", downloads.study_download, "study_download"),
            ("quality/", quality.quality_page, "study_quality"),
            ("quality/gold/", quality.gold_upload, "study_gold_upload"),
            ("quality/attention/", quality.attention_create, "study_attention_create"),
            ("quality/checks/<int:item_id>/remove/", quality.check_remove, "study_check_remove"),
            ("quality/<str:action>/", quality.exclusion, "study_exclusion"),
            ("quality/approvals/<str:platform>.csv", quality.approvals_download, "study_approvals"),
            ("<str:action>/", studies.study_status, "study_status"),
        ],
    ),
    path("organize/annotators/", annotators.annotators, name="annotators"),
    path("organize/annotators/bulk/", annotators.annotators_bulk, name="annotators_bulk"),
    *routes(
        "organize/annotators/<int:rater_id>/",
        [
            ("invite/", annotators.annotator_invite, "annotator_invite"),
            ("active/", annotators.annotator_active, "annotator_active"),
        ],
    ),
    path("organize/api-token/", api_token.api_token, name="api_token"),
    path("organize/rubrics/", rubrics.rubrics, name="rubrics"),
    path("organize/rubrics/<int:rubric_id>/", rubrics.rubric_edit, name="rubric_edit"),
    path("organize/rubrics/<int:rubric_id>/delete/", rubrics.rubric_remove, name="rubric_delete"),
    path("organize/import/", imports.import_page, name="import"),
    path("organize/import/confirm/", imports.import_confirm, name="import_confirm"),
    path("organize/import/formats/", imports.import_formats, name="import_formats"),
    path("organize/datasets/<int:dataset_id>/llms/", llms.dataset_llm_list, name="dataset_llms"),
    path(
        "organize/datasets/<int:dataset_id>/llms/merge/",
        llms.dataset_llm_merge,
        name="dataset_llm_merge",
    ),
]

annotator_pages = [
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

urlpatterns = [
    path("api/", include(data_api + study_api + annotator_api)),
    path("", include((organizer_pages, "organize"))),
    path("", include((annotator_pages, "annotate"))),
]
