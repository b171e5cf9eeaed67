"""REST API for LLM judges: one APIView per operation, explicit serializers, the same services
as the pages. Organizers only; runs only on their own studies, judges only their own."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError as ApiValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.permissions import studies_for
from evaluation import launch, selectors, services
from evaluation.forms import JUDGE_FIELDS
from evaluation.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate


def _api_error(e: ValidationError) -> ApiValidationError:
    return ApiValidationError(
        e.message_dict if hasattr(e, "error_dict") else {"detail": e.messages}
    )


class JudgeOut(serializers.ModelSerializer):
    template = serializers.SlugRelatedField(slug_field="key", read_only=True)
    rater = serializers.CharField(source="rater.pseudonym", read_only=True)

    class Meta:
        model = JudgeConfig
        fields = ["id", "rater", *JUDGE_FIELDS, "created_at"]


class JudgeIn(serializers.ModelSerializer):
    template = serializers.SlugRelatedField(
        slug_field="key", queryset=PromptTemplate.objects.all(), required=False, allow_null=True
    )

    class Meta:
        model = JudgeConfig
        fields = JUDGE_FIELDS

    def validate_template(self, value):
        user = self.context["request"].user
        if value is not None and not services.templates_for(user).filter(pk=value.pk).exists():
            raise serializers.ValidationError("Unknown template.")
        return value


class TemplateSer(serializers.ModelSerializer):
    class Meta:
        model = PromptTemplate
        fields = [
            "id",
            "key",
            "name",
            "kind",
            "parser",
            "system",
            "user",
            "hint_format",
            "json_instructions",
            "builtin",
        ]
        read_only_fields = ["id", "builtin"]
        extra_kwargs = {"key": {"validators": []}}


class JudgeOutWithKey(JudgeOut):
    key_is_set = serializers.BooleanField(read_only=True)

    class Meta(JudgeOut.Meta):
        fields = [*JudgeOut.Meta.fields, "key_is_set"]


class RunIn(serializers.Serializer):
    study = serializers.IntegerField(min_value=1, max_value=2**62)
    judge = serializers.IntegerField(min_value=1, max_value=2**62)
    both_orders = serializers.BooleanField(default=False)
    repeat_rate = serializers.FloatField(default=0.02, min_value=0, max_value=0.5)
    limit = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=10_000_000
    )
    seed = serializers.IntegerField(default=0, min_value=-(2**31), max_value=2**31 - 1)
    budget = serializers.DecimalField(
        max_digits=14, decimal_places=6, min_value=0, required=False, allow_null=True
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


class RunOut(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    study = serializers.IntegerField()
    judge = serializers.CharField()
    template = serializers.CharField()
    planned = serializers.IntegerField()
    done = serializers.IntegerField()
    ok = serializers.IntegerField()
    parse_failed = serializers.IntegerField()
    call_failed = serializers.IntegerField()
    cached = serializers.IntegerField()
    tokens_in = serializers.IntegerField()
    tokens_out = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=18, decimal_places=9)
    price_in_per_1k = serializers.DecimalField(max_digits=12, decimal_places=6)
    price_out_per_1k = serializers.DecimalField(max_digits=12, decimal_places=6)
    budget = serializers.DecimalField(max_digits=14, decimal_places=6, allow_null=True)
    cost_estimate = serializers.DecimalField(max_digits=24, decimal_places=6, allow_null=True)
    both_orders = serializers.BooleanField()
    repeat_rate = serializers.FloatField()
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
        try:
            judge = services.judge_config_create(owner=request.user, **ser.validated_data)
        except ValidationError as e:
            raise _api_error(e) from None
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
        if PromptTemplate.objects.filter(key=ser.validated_data["key"]).exists():
            raise ApiValidationError({"key": ["A template with this key exists."]})
        try:
            template = services.prompt_template_create(owner=request.user, **ser.validated_data)
        except ValidationError as e:
            raise _api_error(e) from None
        return Response(TemplateSer(template).data, status=status.HTTP_201_CREATED)


class RunListApi(APIView):
    @extend_schema(responses=RunOut(many=True), summary="Judge runs on your studies")
    def get(self, request: Request) -> Response:
        runs = selectors.runs_for(request.user)[:200]
        return Response(RunOut([selectors.run_summary(r) for r in runs], many=True).data)


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
        }
        try:
            if data["dry_run"]:
                estimate = launch.judge_run_preflight(**options)
                return Response(EstimateOut(estimate.as_dict()).data)
            run, _estimate = launch.judge_run_start(
                created_by=request.user, budget=data.get("budget"), **options
            )
        except ValidationError as e:
            raise _api_error(e) from None
        return Response(RunOut(selectors.run_summary(run)).data, status=status.HTTP_201_CREATED)


class RunDetailApi(APIView):
    @extend_schema(responses=RunOut, summary="A run's progress and summary")
    def get(self, request: Request, run_id: int) -> Response:
        return Response(RunOut(selectors.run_summary(_run_for(request, run_id))).data)


class RunFailuresApi(APIView):
    @extend_schema(responses=CallOut(many=True), summary="Failed calls and parse failures")
    def get(self, request: Request, run_id: int) -> Response:
        run = _run_for(request, run_id)
        return Response(CallOut(selectors.run_failures(run)[:1000], many=True).data)


class RunCancelApi(APIView):
    @extend_schema(request=None, responses=RunOut, summary="Cancel a run")
    def post(self, request: Request, run_id: int) -> Response:
        run = _run_for(request, run_id)
        try:
            run = services.judge_run_cancel(run=run)
        except ValidationError as e:
            raise _api_error(e) from None
        return Response(RunOut(selectors.run_summary(run)).data)


class RunResumeApi(APIView):
    @extend_schema(request=None, responses={202: RunOut}, summary="Resume a stopped run")
    def post(self, request: Request, run_id: int) -> Response:
        run = _run_for(request, run_id)
        try:
            run = launch.judge_run_resume(run=run)
        except ValidationError as e:
            raise _api_error(e) from None
        return Response(RunOut(selectors.run_summary(run)).data, status=status.HTTP_202_ACCEPTED)


class RunReparseApi(APIView):
    @extend_schema(request=None, responses=ReparseOut, summary="Re-parse stored outputs")
    def post(self, request: Request, run_id: int) -> Response:
        run = _run_for(request, run_id)
        if run.is_active:
            raise ApiValidationError({"detail": ["The run is still active."]})
        return Response(ReparseOut(services.judge_run_reparse(run=run)).data)
