"""REST API of the report: every table as JSON, with the report page's filters as query
parameters; the comparison across settings. Organizer-only (the project's default permission),
owner-only (``get_study_for_organizer``: someone else's study is a 404)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import Http404
from django.utils.functional import lazy
from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.fields import DecimalNumber
from annotation.permissions import get_study_for_organizer
from config.lazy import lazy_module
from ranking.forms import BT_TIES, MAX_SETTINGS, RANKINGS, RATER_KINDS
from ranking.views import compare_settings

# The report stack (pandas, SciPy, numba) is loaded by the first report (config/lazy.py).
if TYPE_CHECKING:
    from ranking import exports, presenters, selectors, services
    from ranking.services import ReportFilters
else:
    exports = lazy_module("ranking.exports")
    presenters = lazy_module("ranking.presenters")
    selectors = lazy_module("ranking.selectors")
    services = lazy_module("ranking.services")

# --------------------------------------------------------------------------- serializers


class ReportQuerySerializer(serializers.Serializer):
    """Filters, as on the report page. Repeat a parameter for several values (?pool=onsite&pool=crowd)."""

    pool = serializers.ListField(child=serializers.CharField(), required=False)
    criterion = serializers.ListField(child=serializers.CharField(), required=False)
    task_type = serializers.ListField(child=serializers.CharField(), required=False)
    start = serializers.DateField(required=False, help_text="First day (UTC), inclusive.")
    end = serializers.DateField(required=False, help_text="Last day (UTC), inclusive.")
    min_accuracy = DecimalNumber(required=False, min_value=0, max_value=1)
    min_consistency = DecimalNumber(required=False, min_value=0, max_value=1)
    exclude_simulated = serializers.BooleanField(required=False, default=False)
    bt_ties = serializers.ChoiceField(
        choices=BT_TIES,
        required=False,
        default="half",
        help_text="Bradley-Terry: a tie is half a win (half) or tied matches are left out.",
    )

    def validate(self, attrs):
        choices = self.context["choices"]
        allowed = {
            "pool": {p for p, _ in choices["pools"]} | {"onsite", "crowd", "public", "judge"},
            "criterion": {c for c, _ in choices["criteria"]},
            "task_type": {t for t, _ in choices["task_types"]},
        }
        errors = {}
        for field, ok in allowed.items():
            bad = [v for v in attrs.get(field, []) if v not in ok]
            if bad:
                errors[field] = [f"Not in this study: {', '.join(bad)}."]
        if attrs.get("start") and attrs.get("end") and attrs["start"] > attrs["end"]:
            errors["end"] = ["The start date is after the end date."]
        if errors:
            raise ValidationError(errors)
        return attrs

    def to_filters(self) -> ReportFilters:
        d = self.validated_data
        return services.ReportFilters.build(
            pools=d.get("pool", ()),
            criteria=d.get("criterion", ()),
            task_types=d.get("task_type", ()),
            start=d.get("start"),
            end=d.get("end"),
            min_accuracy=d.get("min_accuracy"),
            min_consistency=d.get("min_consistency"),
            exclude_simulated=d.get("exclude_simulated", False),
            bt_ties=d.get("bt_ties", "half"),
        )


class StudyRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    mode = serializers.CharField(required=False)


class ReportOutputSerializer(serializers.Serializer):
    study = StudyRefSerializer()
    filters = serializers.DictField()
    meta = serializers.DictField(help_text="Counts, options used, excluded raters, timing.")
    elo_variance = serializers.DictField(
        help_text="Per rater kind: analytic (paper) and observed Elo variance."
    )
    tables = serializers.DictField(
        child=serializers.ListField(child=serializers.DictField()),
        help_text="Every table of the report as a list of records; NaN is null.",
    )


class ReportTableOutputSerializer(serializers.Serializer):
    study = StudyRefSerializer()
    table = serializers.CharField()
    filters = serializers.DictField()
    columns = serializers.ListField(child=serializers.CharField())
    rows = serializers.ListField(child=serializers.DictField())


class CompareRowSerializer(serializers.Serializer):
    model = serializers.CharField()
    value = serializers.FloatField()
    rank = serializers.IntegerField()


class CompareSettingOutputSerializer(serializers.Serializer):
    # DRF's metaclass takes declared fields off the class; the stubs see Field.label shadowed.
    label = serializers.CharField()  # type: ignore[assignment]
    study = StudyRefSerializer()
    ranking = serializers.CharField()
    kind = serializers.CharField()
    filters = serializers.DictField()
    rows = CompareRowSerializer(many=True)


class CompareOutputSerializer(serializers.Serializer):
    settings = CompareSettingOutputSerializer(many=True)
    models = serializers.ListField(child=serializers.CharField())
    correlations = serializers.ListField(
        child=serializers.DictField(),
        help_text="Spearman rho and Kendall tau-b (with p) for every two settings.",
    )


# --------------------------------------------------------------------------- views


# The report API's query parameters: the filters, and DRF's ``format``.
LIST_FILTERS = ("pool", "criterion", "task_type")
VALUE_FILTERS = ("start", "end", "min_accuracy", "min_consistency", "exclude_simulated", "bt_ties")


def _query_params(request: Request) -> dict:
    q = request.query_params
    # A misspelt filter (?pools=crowd) would otherwise give the whole study's figures, as if
    # filtered, with a 200: refused, naming the filters there are.
    unknown = sorted(set(q) - {*LIST_FILTERS, *VALUE_FILTERS, "format"})
    if unknown:
        known = ", ".join((*LIST_FILTERS, *VALUE_FILTERS))
        message = gettext("Not a report filter: %(names)s. The filters are: %(filters)s.")
        raise ValidationError(
            {"unknown_parameters": [message % {"names": ", ".join(unknown), "filters": known}]}
        )
    out: dict = {}
    for key in LIST_FILTERS:
        values = [v for v in q.getlist(key) if v != ""]
        if values:
            out[key] = values
    for key in VALUE_FILTERS:
        if q.get(key):
            out[key] = q[key]
    return out


def _filters(request: Request, study) -> ReportFilters:
    s = ReportQuerySerializer(
        data=_query_params(request), context={"choices": selectors.study_filter_choices(study)}
    )
    s.is_valid(raise_exception=True)
    return s.to_filters()


REPORT_PARAMETERS = [
    OpenApiParameter(
        "pool", OpenApiTypes.STR, many=True, description="onsite, crowd, public, judge"
    ),
    OpenApiParameter("criterion", OpenApiTypes.STR, many=True, description="Criterion key."),
    OpenApiParameter("task_type", OpenApiTypes.STR, many=True, description="Task type / subject."),
    OpenApiParameter("start", OpenApiTypes.DATE, description="First day (UTC), inclusive."),
    OpenApiParameter("end", OpenApiTypes.DATE, description="Last day (UTC), inclusive."),
    OpenApiParameter(
        "min_accuracy", OpenApiTypes.FLOAT, description="Leave out raters below this accuracy."
    ),
    OpenApiParameter(
        "min_consistency",
        OpenApiTypes.FLOAT,
        description="Leave out raters below this consistency.",
    ),
    OpenApiParameter(
        "bt_ties",
        OpenApiTypes.STR,
        enum=list(BT_TIES),
        description="Bradley-Terry ties: half (a tie is half a win, default) or exclude.",
    ),
    OpenApiParameter(
        "exclude_simulated",
        OpenApiTypes.BOOL,
        description="Leave out the simulated raters (manage.py simulate_ratings).",
    ),
]


class ReportAPI(APIView):
    @extend_schema(
        operation_id="study_report",
        summary="The study's full report: every table",
        parameters=REPORT_PARAMETERS,
        responses=ReportOutputSerializer,
        tags=["reports"],
    )
    def get(self, request: Request, study_id: int) -> Response:
        study = get_study_for_organizer(request.user, study_id)
        report = services.report_build(study=study, filters=_filters(request, study))
        return Response(ReportOutputSerializer(exports.report_document(report)).data)


def _tables_description() -> str:
    return "Tables: " + ", ".join(services.table_names()) + "."


class ReportTableAPI(APIView):
    @extend_schema(
        operation_id="study_report_table",
        summary="One table of the study's report",
        description=lazy(_tables_description, str)(),
        parameters=REPORT_PARAMETERS,
        responses=ReportTableOutputSerializer,
        tags=["reports"],
    )
    def get(self, request: Request, study_id: int, table: str) -> Response:
        from ranking.stats.report import jsonable  # numpy, pandas: loaded by the first report

        study = get_study_for_organizer(request.user, study_id)
        if table not in services.table_names():
            raise Http404(f"No table {table!r}.")
        report = services.report_build(study=study, filters=_filters(request, study))
        df = report.table(table)
        data = {
            "study": {"id": study.pk, "name": study.name, "mode": study.mode},
            "table": table,
            "filters": report.filters.as_dict(),
            "columns": [str(c) for c in df.columns],
            "rows": jsonable(df),
        }
        return Response(ReportTableOutputSerializer(data).data)


def _compare_parameters() -> list[OpenApiParameter]:
    params = []
    for i in range(1, MAX_SETTINGS + 1):
        params += [
            OpenApiParameter(
                f"s{i}-study", OpenApiTypes.INT, description=f"Setting {i}: study id."
            ),
            OpenApiParameter(f"s{i}-pool", OpenApiTypes.STR, many=True, description="Pools."),
            OpenApiParameter(f"s{i}-task_type", OpenApiTypes.STR, description="Task type."),
            OpenApiParameter(
                f"s{i}-ranking",
                OpenApiTypes.STR,
                description="One of " + ", ".join(k for k, _ in RANKINGS) + " (default: star "
                "for star studies, points for pairwise).",
            ),
            OpenApiParameter(
                f"s{i}-kind",
                OpenApiTypes.STR,
                description="Raters: " + ", ".join(k for k, _ in RATER_KINDS) + " (default all).",
            ),
            OpenApiParameter(f"s{i}-label", OpenApiTypes.STR, description="Column label."),
        ]
    return params


class CompareAPI(APIView):
    @extend_schema(
        operation_id="reports_compare",
        summary="Rankings of 2-4 settings side by side, with rank correlations",
        description="A setting is a study (yours), optional pool and task-type filters, a ranking "
        "(star, total, points, elo, bt) and the raters it comes from (all, human, judge). "
        "The same study may appear under several settings.",
        parameters=_compare_parameters(),
        responses=CompareOutputSerializer,
        tags=["reports"],
    )
    def get(self, request: Request) -> Response:
        _forms, settings, errors = compare_settings(request)
        if errors:
            raise ValidationError({"settings": errors})
        if len(settings) < 2:
            raise ValidationError(
                {"settings": ["Give at least two settings (s1-study, s2-study)."]}
            )
        return Response(CompareOutputSerializer(presenters.compare(settings)).data)
