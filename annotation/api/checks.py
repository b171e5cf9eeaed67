"""Quality checks and annotators' quality through the API: list a study's checks, mark gold
items, add an attention check, read the per-annotator figures and flags, exclude an annotator or
lift an exclusion. Organizer-only and owner-only (someone else's study is a 404); each view
validates, calls the service the quality page calls (annotation.checks, annotation.quality) and
serializes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import checks
from annotation.models import Study
from annotation.permissions import get_study_for_organizer
from config.lazy import lazy_module

if TYPE_CHECKING:
    from annotation import quality
else:
    quality = lazy_module("annotation.quality")

MAX_CONTENT = 2 * 1024 * 1024


class CheckItemOutput(serializers.Serializer):
    id = serializers.IntegerField()
    check_kind = serializers.CharField()
    question_id = serializers.CharField(source="question.external_id")
    model_a = serializers.CharField(source="response_a.llm.name")
    model_b = serializers.CharField(source="response_b.llm.name", default=None)
    check_answer = serializers.JSONField()


class GoldInput(serializers.Serializer):
    format = serializers.ChoiceField(choices=["csv", "json"], required=False)
    content = serializers.CharField(
        required=False, max_length=MAX_CONTENT, trim_whitespace=False,
        help_text="The CSV or JSON text of the records (with format).",
    )  # fmt: skip
    records = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        max_length=checks.MAX_RECORDS,
        help_text="Or the records themselves: item_id, or question_id and model / model_a and "
        "model_b; choices (pairwise) or scores {criterion: [min, max]} (star).",
    )

    def validate(self, attrs):
        if ("records" in attrs) == ("content" in attrs):
            raise serializers.ValidationError(_("Give either records, or content with format."))
        if "content" in attrs and "format" not in attrs:
            raise serializers.ValidationError(
                {"format": _("Give the content's format: csv or json.")}
            )
        return attrs


class GoldOutput(serializers.Serializer):
    marked = serializers.IntegerField()


class AttentionInput(serializers.Serializer):
    instruction = serializers.CharField(max_length=checks.MAX_TEXT)
    text_a = serializers.CharField(max_length=checks.MAX_TEXT)
    text_b = serializers.CharField(max_length=checks.MAX_TEXT, required=False, allow_blank=True)
    reference = serializers.CharField(
        max_length=checks.MAX_TEXT,
        required=False,
        allow_blank=True,
        help_text="Reference answer, shown when the exposure shows hints (as a regular item's).",
    )
    answer = serializers.JSONField(
        help_text='Pairwise {"choices": ["A"]} (A is text_a); star {"scores": {"key": [4, 5]}}.'
    )


class AnnotatorQualityOutput(serializers.Serializer):
    rater_id = serializers.CharField(help_text="Pseudonym.")
    pool = serializers.CharField()
    n_ratings = serializers.IntegerField()
    n_gold = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    n_attention = serializers.IntegerField()
    attention_failed = serializers.IntegerField()
    straight_share = serializers.FloatField(allow_null=True)
    fast_share = serializers.FloatField(allow_null=True)
    median_s = serializers.FloatField(allow_null=True)
    ds_reliability = serializers.FloatField(allow_null=True)
    agrees_with_ds = serializers.FloatField(allow_null=True)
    star_bias = serializers.FloatField(allow_null=True)
    star_sigma = serializers.FloatField(allow_null=True)
    flags = serializers.CharField()
    excluded = serializers.BooleanField()
    exclusion_reason = serializers.CharField()


class ExclusionInput(serializers.Serializer):
    rater = serializers.CharField(max_length=64, help_text="The annotator's pseudonym.")
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True)


def _bad(error: ValidationError) -> Response:
    return Response({"errors": error.messages}, status=status.HTTP_400_BAD_REQUEST)


def _study_and_input(
    request: Request, study_id: int, input_class: type[serializers.Serializer]
) -> tuple[Study, dict[str, Any]]:
    """The organizer's own study (anyone else's is a 404) and the request body, validated by
    input_class (invalid: a 400)."""
    study = get_study_for_organizer(request.user, study_id)
    data = input_class(data=request.data)
    data.is_valid(raise_exception=True)
    return study, data.validated_data


class StudyChecksApi(APIView):
    @extend_schema(responses=CheckItemOutput(many=True))
    def get(self, request, study_id: int):
        study = get_study_for_organizer(request.user, study_id)
        return Response(CheckItemOutput(checks.check_items(study), many=True).data)


class GoldChecksApi(APIView):
    @extend_schema(request=GoldInput, responses={200: GoldOutput})
    def post(self, request, study_id: int):
        study, v = _study_and_input(request, study_id, GoldInput)
        try:
            if "records" in v:
                n = checks.gold_mark(study=study, marks=checks.marks_resolve(study, v["records"]))
            else:
                n = checks.gold_upload(study=study, text=v["content"], fmt=v["format"])
        except ValidationError as e:
            return _bad(e)
        return Response(GoldOutput({"marked": n}).data)


class AttentionCheckApi(APIView):
    @extend_schema(request=AttentionInput, responses={201: CheckItemOutput})
    def post(self, request, study_id: int):
        study, v = _study_and_input(request, study_id, AttentionInput)
        try:
            item = checks.attention_check_create(study=study, **v)
        except ValidationError as e:
            return _bad(e)
        return Response(CheckItemOutput(item).data, status=status.HTTP_201_CREATED)


class StudyQualityApi(APIView):
    @extend_schema(responses=AnnotatorQualityOutput(many=True))
    def get(self, request, study_id: int):
        study = get_study_for_organizer(request.user, study_id)
        table = quality.study_quality(study)
        rows = table.astype(object).where(table.notna(), None).to_dict("records")
        return Response(AnnotatorQualityOutput(rows, many=True).data)


class ExclusionsApi(APIView):
    @extend_schema(request=ExclusionInput, responses={201: None, 204: None})
    def post(self, request, study_id: int):
        """Exclude an annotator from the report (the ratings stay)."""
        study, v = _study_and_input(request, study_id, ExclusionInput)
        try:
            quality.exclusion_add(
                study=study,
                pseudonym=v["rater"],
                reason=v.get("reason", ""),
                user=request.user,
            )
        except ValidationError as e:
            return _bad(e)
        return Response(status=status.HTTP_201_CREATED)

    @extend_schema(request=ExclusionInput, responses={204: None})
    def delete(self, request, study_id: int):
        """Lift an exclusion."""
        study, v = _study_and_input(request, study_id, ExclusionInput)
        try:
            quality.exclusion_lift(study=study, pseudonym=v["rater"])
        except ValidationError as e:
            return _bad(e)
        return Response(status=status.HTTP_204_NO_CONTENT)
