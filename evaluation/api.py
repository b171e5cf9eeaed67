"""REST API for LLM judges: one APIView per operation, explicit serializers, the same services
as the pages. Organizers only; runs only on their own studies, judges only their own. A service's
ValidationError becomes a 400 in the one DRF exception handler (config/drf.py)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.fields import (
    CountsSerializer,
    DecimalNumber,
    ExactNumber,
    VisibleSlugField,
    WholeNumber,
    slug_of,
)
from annotation.permissions import studies_for
from config.drf import Pages
from evaluation import launch, recording, selectors, services
from evaluation.forms import JUDGE_FIELDS, RUN_BOUNDS, PromptTemplateForm, non_ascii_numbers
from evaluation.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate


class JudgeOut(serializers.ModelSerializer):
    template = slug_of("key")
    rater = serializers.CharField(source="rater.pseudonym", read_only=True)

    class Meta:
        model = JudgeConfig
        fields = ["id", "rater", *JUDGE_FIELDS, "created_at"]


class JudgeIn(serializers.ModelSerializer):
    # Another organizer's template is refused exactly as a missing key.
    template = VisibleSlugField(
        slug_field="key", visible=services.templates_for, required=False, allow_null=True
    )

    class Meta:
        model = JudgeConfig
        fields = JUDGE_FIELDS

    def to_internal_value(self, data):
        errors = non_ascii_numbers(data)
        if errors:
            raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class TemplateSer(serializers.ModelSerializer):
    class Meta:
        model = PromptTemplate
        # What the template page edits, plus the id and whether it ships with the platform.
        fields = ["id", *PromptTemplateForm.Meta.fields, "builtin"]
        read_only_fields = ["id", "builtin"]
        extra_kwargs: dict[str, dict[str, Any]] = {"key": {"validators": []}}


class JudgeOutWithKey(JudgeOut):
    key_is_set = serializers.BooleanField(read_only=True)

    class Meta(JudgeOut.Meta):
        fields = [*JudgeOut.Meta.fields, "key_is_set"]


class RunIn(serializers.Serializer):
    # Numbers in ASCII digits only ("٣" is not 3), as on the run form.
    study = WholeNumber(min_value=1, max_value=2**62)
    judge = WholeNumber(min_value=1, max_value=2**62)
    both_orders = serializers.BooleanField(default=False)
    repeat_rate = DecimalNumber(default=0.02, **RUN_BOUNDS["repeat_rate"])
    limit = WholeNumber(
        required=False,
        allow_null=True,
        help_text="Judge at most N items this judge has not judged yet.",
        **RUN_BOUNDS["limit"],
    )
    seed = WholeNumber(default=0, **RUN_BOUNDS["seed"])
    budget = ExactNumber(required=False, allow_null=True, **RUN_BOUNDS["budget"])
    mode = serializers.ChoiceField(
        choices=JudgeRun.Mode.choices,
        default=JudgeRun.Mode.LIVE,
        help_text="batch: OpenAI's Batch API, half price, results within a day.",
    )
    dry_run = serializers.BooleanField(
        default=False, help_text="Only run the pre-flight and return the cost estimate."
    )


class EstimateOut(serializers.Serializer):
    items = serializers.IntegerField()
    calls = serializers.IntegerField()
    tokens_in = serializers.IntegerField()
    max_tokens_out = serializers.IntegerField()
    cost_in = serializers.DecimalField(max_digits=None, decimal_places=9)
    cost_out_max = serializers.DecimalField(max_digits=None, decimal_places=9)
    total_max = serializers.DecimalField(max_digits=None, decimal_places=9)
    key_env = serializers.CharField()
    key_set = serializers.BooleanField()
    model = serializers.CharField()
    model_listed = serializers.BooleanField(allow_null=True)


class RunOut(CountsSerializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    study = serializers.IntegerField()
    judge = serializers.CharField()
    template = serializers.CharField()
    counts = (
        "planned",
        "done",
        "ok",
        "parse_failed",
        "call_failed",
        "cached",
        "tokens_in",
        "tokens_out",
    )
    counts_after = "template"
    cost = serializers.DecimalField(max_digits=18, decimal_places=9)
    price_in_per_1k = serializers.DecimalField(max_digits=12, decimal_places=6)
    price_out_per_1k = serializers.DecimalField(max_digits=12, decimal_places=6)
    budget = serializers.DecimalField(max_digits=14, decimal_places=6, allow_null=True)
    cost_estimate = serializers.DecimalField(max_digits=24, decimal_places=6, allow_null=True)
    both_orders = serializers.BooleanField()
    repeat_rate = serializers.FloatField()
    mode = serializers.CharField()
    position_consistency = serializers.DictField(allow_null=True)
    self_consistency = serializers.DictField(allow_null=True)
    error = serializers.CharField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class CallOut(serializers.ModelSerializer):
    class Meta:
        model = JudgeCall
        fields = [
            "id",
            "item",
            "purpose",
            "left_is_a",
            "status",
            "error",
            "http_status",
            "attempts",
            "raw_output",
            "finish_reason",
            "parse_status",
            "parse_error",
            "parsed",
            "tokens_in",
            "tokens_out",
            "cost",
            "cached",
            "request_hash",
        ]


class ReparseOut(serializers.Serializer):
    changed = serializers.IntegerField()
    ok = serializers.IntegerField()
    parse_failed = serializers.IntegerField()


def _page(request: Request, view: APIView, queryset, serialize) -> Response:
    pages = Pages()
    rows: list[Any] | None = pages.paginate_queryset(queryset, request, view=view)
    return pages.get_paginated_response(serialize(rows))


def _run_for(request: Request, run_id: int) -> JudgeRun:
    return get_object_or_404(selectors.runs_for(request.user), pk=run_id)


class JudgeListApi(APIView):
    @extend_schema(responses=JudgeOutWithKey(many=True), summary="Your judge configurations")
    def get(self, request: Request) -> Response:
        return Response(JudgeOutWithKey(services.judges_for(request.user), many=True).data)


class JudgeCreateApi(APIView):
    @extend_schema(request=JudgeIn, responses={201: JudgeOut}, summary="Create a judge")
    def post(self, request: Request) -> Response:
        ser = JudgeIn(data=request.data, context={"request": request})
        ser.is_valid(raise_exception=True)
        judge = services.judge_config_create(owner=request.user, **ser.validated_data)
        return Response(JudgeOut(judge).data, status=status.HTTP_201_CREATED)


class TemplateListApi(APIView):
    @extend_schema(responses=TemplateSer(many=True), summary="Built-in and your templates")
    def get(self, request: Request) -> Response:
        return Response(TemplateSer(services.templates_for(request.user), many=True).data)


class TemplateCreateApi(APIView):
    @extend_schema(request=TemplateSer, responses={201: TemplateSer}, summary="Add a template")
    def post(self, request: Request) -> Response:
        ser = TemplateSer(data=request.data)
        ser.is_valid(raise_exception=True)
        template = services.prompt_template_create(owner=request.user, **ser.validated_data)
        return Response(TemplateSer(template).data, status=status.HTTP_201_CREATED)


class RunListApi(APIView):
    @extend_schema(
        responses=RunOut(many=True),
        parameters=[OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
        summary="Judge runs on your studies, newest first, in pages (limit/offset)",
    )
    def get(self, request: Request) -> Response:
        return _page(
            request,
            self,
            selectors.runs_for(request.user).order_by("-created_at", "-pk"),
            lambda runs: RunOut([selectors.run_summary(r) for r in runs], many=True).data,
        )


class RunStartApi(APIView):
    @extend_schema(
        request=RunIn,
        responses={201: RunOut, 200: EstimateOut},
        summary="Start a judge run (after the pre-flight), or only estimate it (dry_run)",
    )
    def post(self, request: Request) -> Response:
        ser = RunIn(data=request.data)
        ser.is_valid(raise_exception=True)
        data = ser.validated_data
        study = get_object_or_404(studies_for(request.user), pk=data["study"])
        judge = get_object_or_404(services.judges_for(request.user), pk=data["judge"])
        options = {
            "study": study,
            "judge": judge,
            "both_orders": data["both_orders"],
            "repeat_rate": data["repeat_rate"],
            "limit": data.get("limit"),
            "seed": data["seed"],
            "mode": data["mode"],
        }
        if data["dry_run"]:
            estimate = launch.judge_run_preflight(**options)
            return Response(EstimateOut(estimate.as_dict()).data)
        run, _estimate = launch.judge_run_start(
            created_by=request.user, budget=data.get("budget"), **options
        )
        return Response(RunOut(selectors.run_summary(run)).data, status=status.HTTP_201_CREATED)


class RunDetailApi(APIView):
    @extend_schema(responses=RunOut, summary="A run's progress and summary")
    def get(self, request: Request, run_id: int) -> Response:
        return Response(RunOut(selectors.run_summary(_run_for(request, run_id))).data)


class RunFailuresApi(APIView):
    @extend_schema(
        responses=CallOut(many=True),
        parameters=[OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
        summary="Failed calls and parse failures, in pages (limit/offset)",
    )
    def get(self, request: Request, run_id: int) -> Response:
        run = _run_for(request, run_id)
        return _page(
            request, self, selectors.run_failures(run), lambda c: CallOut(c, many=True).data
        )


class RunCancelApi(APIView):
    @extend_schema(request=None, responses=RunOut, summary="Cancel a run")
    def post(self, request: Request, run_id: int) -> Response:
        run = _run_for(request, run_id)
        run = services.judge_run_cancel(run=run)
        return Response(RunOut(selectors.run_summary(run)).data)


class RunResumeApi(APIView):
    @extend_schema(request=None, responses={202: RunOut}, summary="Resume a stopped run")
    def post(self, request: Request, run_id: int) -> Response:
        run = _run_for(request, run_id)
        run = launch.judge_run_resume(run=run)
        return Response(RunOut(selectors.run_summary(run)).data, status=status.HTTP_202_ACCEPTED)


class RunReparseApi(APIView):
    @extend_schema(request=None, responses=ReparseOut, summary="Re-parse stored outputs")
    def post(self, request: Request, run_id: int) -> Response:
        run = _run_for(request, run_id)
        if run.is_active:
            raise ApiValidationError({"detail": [_("The run is still active.")]})
        return Response(ReparseOut(recording.judge_run_reparse(run=run)).data)
