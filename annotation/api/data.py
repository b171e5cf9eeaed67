"""The data API: datasets, questions, responses, LLMs and rubrics (read), studies (organizers
create and update their own), imports (upload -> the same importers as the command) and raw
exports. Organizer-only (the default permission); someone else's study is a 404.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.db.models import QuerySet
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response as ApiResponse
from rest_framework.views import APIView

from annotation import selectors
from annotation.api import serializers as s
from annotation.exports import CONTENT_TYPES, export_filename, export_iter
from annotation.importers import ImportRefused
from annotation.models import ImportRecord, Study
from annotation.permissions import AmbiguousName, get_study_for_organizer, one_named
from annotation.services import study_create, uploads_import
from ranking.warm import reports_warm


def _error(message, code=status.HTTP_400_BAD_REQUEST) -> ApiResponse:
    return ApiResponse({"detail": message}, status=code)


# --- data (read) ------------------------------------------------------------------------------
# One read-only view set per resource serves its list and its detail (annotation/urls.py routes
# GET on each).


# Every read is scoped to what the organizer may see (annotation.permissions.datasets_visible):
# another organizer's dataset, question, response or LLM is a 404 like a missing one.


class Datasets(viewsets.ReadOnlyModelViewSet):
    serializer_class = s.DatasetOut

    def get_queryset(self) -> QuerySet:
        return selectors.dataset_list(self.request.user)


QUESTION_FILTERS = [
    OpenApiParameter("dataset", str, description="Dataset id or name."),
    OpenApiParameter("task_type", str),
    OpenApiParameter("kind", str, enum=["objective", "subjective", ""]),
    OpenApiParameter(
        "search", str, description="In the text and the external id; at most 1000 characters."
    ),
]


# A resource whose list is filtered by the query string, which its selector `select` reads; the
# detail is never filtered.
class _Filtered(viewsets.ReadOnlyModelViewSet):
    select: Callable[[Any, Mapping[str, str] | None], QuerySet]

    def get_queryset(self) -> QuerySet:
        query = self.request.query_params if self.action == "list" else None
        return self.select(self.request.user, query)


@extend_schema_view(list=extend_schema(parameters=QUESTION_FILTERS))
class Questions(_Filtered):
    serializer_class = s.QuestionOut
    select = staticmethod(selectors.question_list)


RESPONSE_FILTERS = [
    OpenApiParameter("dataset", str, description="Dataset id or name."),
    OpenApiParameter("question", int, description="Question id."),
    OpenApiParameter("llm", str, description="LLM name."),
    OpenApiParameter("task_type", str),
]


@extend_schema_view(list=extend_schema(parameters=RESPONSE_FILTERS))
class Responses(_Filtered):
    serializer_class = s.ResponseOut
    select = staticmethod(selectors.response_list)


class LLMs(viewsets.ReadOnlyModelViewSet):
    serializer_class = s.LLMOut

    def get_queryset(self) -> QuerySet:
        return selectors.llm_list(self.request.user)


class Rubrics(viewsets.ReadOnlyModelViewSet):
    """The built-in rubrics, your own and those your studies use (superusers: all). Keys are
    unique per owner: the detail is your own rubric of that key, else the built-in one, else the
    only one you may read; another organizer's is a 404 like a missing one."""

    serializer_class = s.RubricOut
    lookup_field = "key"

    def get_queryset(self) -> QuerySet:
        return selectors.rubric_list(self.request.user)

    def get_object(self) -> Any:
        try:
            found = one_named(self.get_queryset(), self.request.user, key=self.kwargs["key"])
        except AmbiguousName as e:
            raise ValidationError(str(e)) from None
        if found is None:
            raise Http404
        return found


# --- studies ----------------------------------------------------------------------------------


class StudyListCreate(generics.ListAPIView):
    """GET: the studies you own (superusers: all). POST: create a study and its items."""

    serializer_class = s.StudyOut

    def get_queryset(self):
        return selectors.study_list_for(self.request.user).order_by("-created_at")

    @extend_schema(
        request=s.StudyCreateIn,
        responses={201: s.StudyOut, 400: s.ErrorOut},
    )
    def post(self, request: Request) -> ApiResponse:
        data = s.StudyCreateIn(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        # A ValidationError from the service is a 400 (config/drf.py exception_handler).
        study = study_create(owner=request.user, **data.validated_data)
        study = selectors.study_list_for(request.user).get(pk=study.pk)
        return ApiResponse(s.StudyOut(study).data, status=status.HTTP_201_CREATED)


class StudyDetailUpdate(APIView):
    @extend_schema(responses={200: s.StudyOut, 404: s.ErrorOut})
    def get(self, request: Request, pk: int) -> ApiResponse:
        study = get_object_or_404(selectors.study_list_for(request.user), pk=pk)
        return ApiResponse(s.StudyOut(study).data)

    @extend_schema(
        request=s.StudyUpdateIn, responses={200: s.StudyOut, 400: s.ErrorOut, 404: s.ErrorOut}
    )
    def patch(self, request: Request, pk: int) -> ApiResponse:
        study = get_study_for_organizer(request.user, pk)
        data = s.StudyUpdateIn(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        for field, value in data.validated_data.items():
            setattr(study, field, value)
        study.full_clean()  # a ValidationError is a 400 (config/drf.py exception_handler)
        study.save(update_fields=list(data.validated_data) or None)
        study = selectors.study_list_for(request.user).get(pk=study.pk)
        return ApiResponse(s.StudyOut(study).data)


# --- imports and exports ----------------------------------------------------------------------


class ImportListCreate(generics.ListAPIView):
    """GET: your import records (superusers: all). POST: upload files -> the same importers as
    `manage.py import_dataset`; 201 with the counts, or 400 naming the file and record."""

    serializer_class = s.ImportRecordOut
    parser_classes = [MultiPartParser, FormParser]

    def get_queryset(self):
        qs = ImportRecord.objects.select_related("user").order_by("-created_at")
        return qs if self.request.user.is_superuser else qs.filter(user=self.request.user)

    @extend_schema(
        request={"multipart/form-data": s.ImportIn},
        responses={201: s.ImportOut, 200: s.ImportOut, 400: s.ErrorOut},
    )
    def post(self, request: Request) -> ApiResponse:
        data = s.ImportIn(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            result = uploads_import(
                format=v["format"],
                files=v["files"],
                folder=v.get("folder") or "",
                user=request.user,
                dry_run=v["dry_run"],
                options=v,
            )
        except ImportRefused as exc:
            # Every bad record, one line each (file, line, why), so a client can show them all.
            return ApiResponse(
                {
                    "detail": _("refused, nothing was written: %(error)s") % {"error": exc},
                    "errors": [str(e) for e in exc.errors],
                },
                status=status.HTTP_400_BAD_REQUEST,
            )
        reports_warm(result.study_ids, dry_run=result.dry_run)  # large studies' reports, queued
        out = {
            "format": result.format,
            "dry_run": result.dry_run,
            "added": result.added,
            "skipped": result.skipped,
            "repairs": [r.line() for r in result.repairs],
            "dataset_id": result.dataset_id,
            "study_ids": result.study_ids,
            "record_id": result.record_id,
            "summary": result.summary_lines(),
        }
        code = status.HTTP_200_OK if result.dry_run else status.HTTP_201_CREATED
        return ApiResponse(s.ImportOut(out).data, status=code)


class StudyExport(APIView):
    @extend_schema(
        parameters=[s.ExportQuery],
        responses={
            (200, "text/csv"): OpenApiTypes.BINARY,
            (200, "application/x-ndjson"): OpenApiTypes.BINARY,
            (200, CONTENT_TYPES["xlsx"]): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="Not your study."),
        },
        description="Raw export of one of your studies: its ratings (one row per rating x "
        "criterion for star studies, per rating for pairwise; raters by pseudonym) or its "
        "responses, as CSV, JSONL or XLSX.",
    )
    def get(self, request: Request, pk: int):
        study: Study = get_study_for_organizer(request.user, pk)
        query = s.ExportQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        what, fmt = query.validated_data["what"], query.validated_data["file_format"]
        response = StreamingHttpResponse(
            export_iter(study, what=what, fmt=fmt), content_type=CONTENT_TYPES[fmt]
        )
        name = export_filename(study, what=what, fmt=fmt)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
