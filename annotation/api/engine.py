"""The assignment engine through the API: study lifecycle, live progress, onsite annotators and
crowd links. Organizer-only (the default permission) and owner-only (get_study_for_organizer:
someone else's study is a 404). Each view validates, calls the service the pages call,
serializes."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import engine
from annotation.api.fields import CountsSerializer
from annotation.forms import AnnotatorCreateForm
from annotation.permissions import get_study_for_organizer
from annotation.services import study_set_status
from annotation.views.organizer import (
    STATUS_ACTIONS,
    onsite_annotator_create,
    onsite_annotators_for,
    study_links,
)


class StudyStatusOutput(serializers.Serializer):
    id = serializers.IntegerField()
    public_id = serializers.CharField()
    status = serializers.CharField()


class AnnotatorProgressOutput(CountsSerializer):
    pseudonym = serializers.CharField()
    pool = serializers.CharField()
    counts = ("submitted", "repeats", "skipped", "open")
    counts_after = "pool"
    median_s = serializers.FloatField(allow_null=True)


class ProgressOutput(CountsSerializer):
    counts = (
        "items_total",
        "items_complete",
        "ratings",
        "ratings_needed",
        "percent",
        "open_reservations",
        "lapsed_reservations",
    )
    annotators = AnnotatorProgressOutput(many=True)


class LinksOutput(serializers.Serializer):
    onsite = serializers.CharField()
    prolific = serializers.CharField()
    mturk = serializers.CharField()
    public = serializers.CharField()


class AnnotatorInput(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(required=False, allow_blank=True, write_only=True)


class AnnotatorOutput(serializers.Serializer):
    # No pseudonym: an account list with pseudonyms beside usernames would undo the
    # pseudonymisation of the progress views, reports and exports (docs/decisions/organizer.md).
    id = serializers.IntegerField()
    username = serializers.CharField(source="user.username")
    active = serializers.BooleanField(source="user.is_active")
    created_at = serializers.DateTimeField()


class StudyLifecycleApi(APIView):
    action_name = ""

    @extend_schema(request=None, responses=StudyStatusOutput)
    def post(self, request: Request, study_id: int) -> Response:
        study = get_study_for_organizer(request.user, study_id)
        try:
            study_set_status(study=study, status=STATUS_ACTIONS[self.action_name])
        except ValidationError as e:
            return Response({"detail": " ".join(e.messages)}, status=status.HTTP_409_CONFLICT)
        return Response(StudyStatusOutput(study).data)


class StudyLaunchApi(StudyLifecycleApi):
    action_name = "launch"


class StudyPauseApi(StudyLifecycleApi):
    action_name = "pause"


class StudyCloseApi(StudyLifecycleApi):
    action_name = "close"


class StudyProgressApi(APIView):
    @extend_schema(responses=ProgressOutput)
    def get(self, request: Request, study_id: int) -> Response:
        study = get_study_for_organizer(request.user, study_id)
        engine.assignments_expire(study=study)
        return Response(ProgressOutput(engine.study_progress(study=study)).data)


class StudyLinksApi(APIView):
    @extend_schema(responses=LinksOutput)
    def get(self, request: Request, study_id: int) -> Response:
        study = get_study_for_organizer(request.user, study_id)
        return Response(LinksOutput(study_links(request, study)).data)


class OnsiteAnnotatorsApi(APIView):
    @extend_schema(responses=AnnotatorOutput(many=True))
    def get(self, request: Request) -> Response:
        raters = onsite_annotators_for(request.user).order_by("id")
        return Response(AnnotatorOutput(raters, many=True).data)

    @extend_schema(request=AnnotatorInput, responses=AnnotatorOutput)
    def post(self, request: Request) -> Response:
        data = AnnotatorInput(data=request.data)
        data.is_valid(raise_exception=True)
        form = AnnotatorCreateForm(data.validated_data)
        if not form.is_valid():
            return Response(form.errors, status=status.HTTP_400_BAD_REQUEST)
        rater, invite = onsite_annotator_create(
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password"],
            invited_by=request.user,
        )
        body = dict(AnnotatorOutput(rater).data)
        if invite:
            body["invite_url"] = request.build_absolute_uri(invite)
        return Response(body, status=status.HTTP_201_CREATED)
