"""Explicit input and output serializers of the data API."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from annotation import limits
from annotation.api.fields import (
    CountsSerializer,
    DecimalNumber,
    VisibleSlugField,
    WholeNumber,
    slug_of,
)
from annotation.exports import FORMATS as EXPORT_FORMATS
from annotation.exports import WHATS
from annotation.importers import FORMATS as IMPORT_FORMATS
from annotation.importers.results import ENTITIES
from annotation.models import (
    LLM,
    Criterion,
    Dataset,
    ImportRecord,
    Question,
    Response,
    Rubric,
    Study,
)
from annotation.permissions import datasets_visible, llms_visible, rubrics_visible


class DatasetOut(serializers.ModelSerializer):
    n_questions = serializers.IntegerField(read_only=True)

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "source", "created_at", "n_questions"]


class QuestionOut(serializers.ModelSerializer):
    dataset = slug_of("name")
    n_responses = serializers.IntegerField(read_only=True)

    class Meta:
        model = Question
        fields = [
            "id",
            "dataset",
            "external_id",
            "text",
            "task_type",
            "subcategory",
            "kind",
            "answer_type",
            "reference",
            "meta",
            "n_responses",
        ]


class LLMOut(serializers.ModelSerializer):
    n_responses = serializers.IntegerField(read_only=True)

    class Meta:
        model = LLM
        fields = ["id", "name", "description", "n_responses"]


class ResponseOut(serializers.ModelSerializer):
    llm = slug_of("name")
    question_external_id = serializers.CharField(source="question.external_id", read_only=True)
    dataset = serializers.CharField(source="question.dataset.name", read_only=True)

    class Meta:
        model = Response
        fields = [
            "id",
            "question",
            "question_external_id",
            "dataset",
            "llm",
            "external_id",
            "text",
            "length",
        ]


class CriterionOut(serializers.ModelSerializer):
    class Meta:
        model = Criterion
        fields = [
            "key",
            "label_en",
            "label_zh",
            "min_score",
            "max_score",
            "descriptions",
            "applies_to",
            "order",
        ]


class RubricOut(serializers.ModelSerializer):
    criteria = CriterionOut(many=True, read_only=True)

    class Meta:
        model = Rubric
        fields = ["key", "name_en", "name_zh", "mode", "description", "builtin", "criteria"]


DESIGN_FIELDS = [
    "ratings_per_item",
    "repeat_rate",
    "assignment_mode",
    "check_rate",
    "hint_policy",
    "reservation_timeout",
    "admit_onsite",
    "admit_crowd",
    "admit_public",
    "quota_onsite",
    "quota_crowd",
    "quota_public",
    "completion_code",
    "no_more_work_code",
    "completion_url",
]


class StudyOut(serializers.ModelSerializer):
    dataset = slug_of("name")
    rubric = slug_of("key")
    owner = slug_of("username")
    baseline_llm = slug_of("name")
    n_items = serializers.IntegerField(read_only=True)

    class Meta:
        model = Study
        fields = [
            "id",
            "public_id",
            "name",
            "description",
            "instructions",
            "dataset",
            "mode",
            "rubric",
            "status",
            "owner",
            "pair_design",
            "baseline_llm",
            "pairs_per_question",
            "selection",
            *DESIGN_FIELDS,
            "created_at",
            "n_items",
        ]


class StudyDesignIn(serializers.Serializer):
    """The texts and the assignment design: what a study is created with and may change later.
    A partial update (PATCH) leaves out what was not sent: DRF applies no defaults then."""

    description = serializers.CharField(required=False, allow_blank=True, default="")
    instructions = serializers.CharField(required=False, allow_blank=True, default="")
    ratings_per_item = WholeNumber(
        required=False, min_value=1, max_value=limits.MAX_RATINGS_PER_ITEM
    )
    repeat_rate = DecimalNumber(required=False, min_value=0, max_value=0.5)
    assignment_mode = serializers.ChoiceField(choices=Study.AssignmentMode.choices, required=False)
    check_rate = DecimalNumber(required=False, min_value=0, max_value=0.5)
    hint_policy = serializers.ChoiceField(choices=Study.HintPolicy.choices, required=False)
    reservation_timeout = WholeNumber(
        required=False, min_value=1, max_value=limits.MAX_RESERVATION_TIMEOUT
    )
    admit_onsite = serializers.BooleanField(required=False)
    admit_crowd = serializers.BooleanField(required=False)
    admit_public = serializers.BooleanField(required=False)
    quota_onsite = WholeNumber(
        required=False, allow_null=True, min_value=1, max_value=limits.MAX_QUOTA
    )
    quota_crowd = WholeNumber(
        required=False, allow_null=True, min_value=1, max_value=limits.MAX_QUOTA
    )
    quota_public = WholeNumber(
        required=False, allow_null=True, min_value=1, max_value=limits.MAX_QUOTA
    )
    completion_code = serializers.CharField(required=False, allow_blank=True, max_length=64)
    no_more_work_code = serializers.CharField(required=False, allow_blank=True, max_length=64)
    completion_url = serializers.URLField(required=False, allow_blank=True)


class StudyCreateIn(StudyDesignIn):
    name = serializers.CharField(max_length=200)
    dataset = VisibleSlugField(slug_field="name", visible=datasets_visible)
    mode = serializers.ChoiceField(choices=Rubric.Mode.choices)
    rubric = VisibleSlugField(slug_field="key", visible=rubrics_visible)
    selection = serializers.JSONField(
        required=False,
        default=dict,
        help_text='{"task_types": [...], "kinds": [...], "llms": [...], "question_ids": [...], '
        '"max_questions": n}',
    )
    pair_design = serializers.ChoiceField(
        choices=Study.PairDesign.choices, required=False, default=Study.PairDesign.ALL
    )
    baseline_llm = VisibleSlugField(
        slug_field="name", visible=llms_visible, required=False, allow_null=True
    )
    pairs_per_question = WholeNumber(
        required=False, allow_null=True, min_value=1, max_value=limits.MAX_PAIRS_PER_QUESTION
    )
    seed = WholeNumber(required=False, default=0, min_value=0, max_value=limits.MAX_SEED)

    def validate_selection(self, value: Any) -> dict[str, Any]:
        try:
            return limits.clean_selection(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


class StudyUpdateIn(StudyDesignIn):
    """What can change after creation: texts and the assignment design (not the items)."""

    name = serializers.CharField(max_length=200, required=False)


class ImportIn(serializers.Serializer):
    format = serializers.ChoiceField(choices=list(IMPORT_FORMATS))
    files = serializers.ListField(
        child=serializers.FileField(), allow_empty=False, help_text="One or more files."
    )
    folder = serializers.ChoiceField(
        choices=["", "human-score", "gpt-score"],
        required=False,
        default="",
        help_text="llmeval2-scores: the score folder the files come from (selects the rater).",
    )
    dataset = serializers.CharField(required=False, allow_blank=True)
    study = serializers.CharField(required=False, allow_blank=True)
    rater = serializers.CharField(required=False, allow_blank=True)
    rater_kind = serializers.ChoiceField(
        choices=["", "human", "judge"], required=False, allow_blank=True
    )
    rubric = serializers.CharField(required=False, allow_blank=True)
    dry_run = serializers.BooleanField(required=False, default=False)


class CountsOut(CountsSerializer):
    counts = ENTITIES


class ImportOut(serializers.Serializer):
    format = serializers.CharField()
    dry_run = serializers.BooleanField()
    added = CountsOut()
    skipped = CountsOut()
    repairs = serializers.ListField(child=serializers.CharField())
    dataset_id = serializers.IntegerField(allow_null=True)
    study_ids = serializers.ListField(child=serializers.IntegerField())
    record_id = serializers.IntegerField(allow_null=True)
    summary = serializers.ListField(child=serializers.CharField())


class ImportRecordOut(serializers.ModelSerializer):
    user = slug_of("username")

    class Meta:
        model = ImportRecord
        fields = [
            "id",
            "format",
            "paths",
            "dataset",
            "user",
            "ok",
            "counts",
            "repairs",
            "message",
            "created_at",
        ]


class ExportQuery(serializers.Serializer):
    # Not "format": DRF reserves ?format= for choosing a renderer.
    what = serializers.ChoiceField(choices=list(WHATS), default="ratings")
    file_format = serializers.ChoiceField(choices=list(EXPORT_FORMATS), default="csv")


class ErrorOut(serializers.Serializer):
    detail = serializers.CharField()
