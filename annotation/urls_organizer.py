from __future__ import annotations

from django.urls import path

from annotation.views_organizer import annotators, downloads, imports, llms, studies

app_name = "organize"

urlpatterns = [
    path("organize/studies/", studies.study_list, name="studies"),
    path("organize/studies/new/", studies.study_new, name="study_new"),
    path("organize/studies/<int:study_id>/", studies.study_detail, name="study"),
    path("organize/studies/<int:study_id>/edit/", studies.study_edit, name="study_edit"),
    path(
        "organize/studies/<int:study_id>/download/<str:what>.<str:fmt>",
        downloads.study_download,
        name="study_download",
    ),
    path(
        "organize/studies/<int:study_id>/<str:action>/",
        studies.study_status,
        name="study_status",
    ),
    path("organize/annotators/", annotators.annotators, name="annotators"),
    path("organize/annotators/bulk/", annotators.annotators_bulk, name="annotators_bulk"),
    path(
        "organize/annotators/<int:rater_id>/invite/",
        annotators.annotator_invite,
        name="annotator_invite",
    ),
    path(
        "organize/annotators/<int:rater_id>/active/",
        annotators.annotator_active,
        name="annotator_active",
    ),
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
