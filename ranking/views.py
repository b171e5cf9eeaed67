"""Report pages and downloads for organizers. Each view checks organizer rights and fetches the
study through ``get_study_for_organizer`` (someone else's study is a 404), including the htmx
partial, which is the same view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET

from annotation.htmx import HtmxHttpRequest
from annotation.limits import parse_id
from annotation.permissions import get_study_for_organizer, organizer_required, studies_for
from config.lazy import lazy_module
from ranking.forms import MAX_SETTINGS, ReportFilterForm, chosen_settings, setting_forms

# The report stack (pandas, SciPy, numba, matplotlib) is loaded by the first report, not by every
# process that loads the URLconf (config/lazy.py).
if TYPE_CHECKING:
    import pandas as pd

    from ranking import chart_groups, exports, presenters, services, summary
    from ranking.services import ReportFilters
else:
    pd = lazy_module("pandas")
    chart_groups = lazy_module("ranking.chart_groups")
    exports = lazy_module("ranking.exports")
    presenters = lazy_module("ranking.presenters")
    services = lazy_module("ranking.services")
    summary = lazy_module("ranking.summary")


def _filters_from(request: HttpRequest, study) -> tuple[ReportFilterForm, ReportFilters | None]:
    form = ReportFilterForm(request.GET or None, study=study)
    if not form.is_bound:
        return form, services.ReportFilters()
    if not form.is_valid():
        return form, None
    return form, form.to_filters()


FORMAT_LABELS = {
    "json": "JSON",
    "csv": "CSV",
    "excel-csv": gettext_lazy("CSV for Excel"),
    "xlsx": "XLSX",
}
TABLES = (
    "correlations",
    "accuracy_by_pool",
    "accuracy_by_criterion",
    "accuracy_by_rater",
    "consistency_by_pool",
    "consistency_by_criterion",
    "consistency_by_rater",
    "length_bias",
    "gaps",
    "discrimination",
    "hint_effect",
    "elo_stability",
    "krippendorff",
    "kappa",
    "position_bias",
    "annotator_diagnostics",
    "exclusions",
    "annotator_reliability",
    "gold_by_pool",
)


def _report_context(report) -> dict:
    # No chart here: the page loads them from report_charts once it is shown (chart_groups).
    return {
        "report": report,
        "meta": report.meta,
        "summary": summary.report_summary(report),
        "leaderboards": presenters.side_by_side(report),
        "star_tables": [presenters.star_by_criterion(report, kind) for kind in ("human", "judge")],
        "correlation_matrix": presenters.correlation_matrix(report),
        "tables": {name: presenters.table(report.table(name), name) for name in TABLES},
        "elo_variance": presenters.dict_table(report.tables.get("elo_variance"), "elo_variance"),
        "formats": [(f, FORMAT_LABELS.get(f, f.upper())) for f in exports.FORMATS],
    }


@require_GET
@organizer_required
def report_page(request: HtmxHttpRequest, study_id: int) -> HttpResponse:
    """The study's report; with htmx only the report body is re-rendered for new filters."""
    study = get_study_for_organizer(request.user, study_id)
    form, filters = _filters_from(request, study)
    context = {"study": study, "form": form, "query": request.GET.urlencode()}
    if filters is not None:
        report = services.report_build(study=study, filters=filters, stale_ok=True)
        # A large study's first report is being computed by a background job: say so.
        context.update({"computing": True} if report.computing else _report_context(report))
    # Bad filters are a 400 for plain requests; htmx swaps only 2xx responses, so it gets the
    # body with the errors as a 200.
    status = 200 if filters is not None or request.htmx else 400
    template = "ranking/report.html#report-body" if request.htmx else "ranking/report.html"
    response = render(request, template, context, status=status)
    patch_vary_headers(response, ("HX-Request",))  # a fragment or the page, by that header
    return response


@require_GET
@organizer_required
def report_charts(request: HtmxHttpRequest, study_id: int) -> HttpResponse:
    """The report page's charts under its filters: for htmx, each group of charts as an
    out-of-band swap into its place on the page; opened directly, a page of charts."""
    study = get_study_for_organizer(request.user, study_id)
    form, filters = _filters_from(request, study)
    if filters is None:
        return HttpResponseBadRequest(
            _("Invalid filters: %(errors)s") % {"errors": form.errors.as_text()},
            content_type="text/plain; charset=utf-8",
        )
    report = services.report_build(study=study, filters=filters, stale_ok=True)
    groups = [] if report.computing else chart_groups.groups(report)
    if not request.htmx:
        # The page of its own lists the groups with charts (the swaps also empty the others).
        groups = [g for g in groups if g.figures]
    context = {
        "study": study,
        "query": request.GET.urlencode(),
        "computing": report.computing,
        "groups": groups,
    }
    template = "ranking/_chart_swaps.html" if request.htmx else "ranking/charts.html"
    response = render(request, template, context)
    patch_vary_headers(response, ("HX-Request",))
    return response


@require_GET
@organizer_required
def statistics_page(request: HttpRequest) -> HttpResponse:
    """docs/statistics.md, the definition of every figure of the report, with anchors that the
    report's sections link to."""
    from ranking.definitions import statistics_document

    doc, contents = statistics_document()
    return render(request, "ranking/statistics.html", {"doc": doc, "contents": contents})


@require_GET
@organizer_required
def report_download(request: HttpRequest, study_id: int, fmt: str) -> HttpResponse:
    """The whole report under the page's current filters, as JSON, a zip of CSVs, or XLSX."""
    study = get_study_for_organizer(request.user, study_id)
    if fmt not in exports.FORMATS:
        raise Http404
    form, filters = _filters_from(request, study)
    if filters is None:
        return HttpResponseBadRequest(
            _("Invalid filters: %(errors)s") % {"errors": form.errors.as_text()},
            content_type="text/plain; charset=utf-8",
        )
    report = services.report_build(study=study, filters=filters)
    response = HttpResponse(exports.render(report, fmt), content_type=exports.CONTENT_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{exports.filename(report, fmt)}"'
    return response


def _check_compare_studies(request: HttpRequest):
    """Someone else's study named in the query is a 404, as everywhere else."""
    studies = studies_for(request.user)
    for i in range(1, MAX_SETTINGS + 1):
        raw = request.GET.get(f"s{i}-study")
        pk = parse_id(raw) if raw else None
        if raw and (pk is None or not studies.filter(pk=pk).exists()):
            raise Http404
    return studies


def compare_settings(request: HttpRequest):
    """Parse the comparison's settings from the query: (forms, settings, errors)."""
    studies = _check_compare_studies(request)
    forms_ = setting_forms(request.GET, user_studies=studies)
    chosen, errors = chosen_settings(forms_)
    settings = [
        presenters.Setting(
            study=f.cleaned_data["study"],
            filters=f.filters(),
            ranking=f.cleaned_data["ranking"],
            kind=f.cleaned_data["kind"],
            label=f.display_label(),
        )
        for f in chosen
    ]
    return forms_, settings, errors


@require_GET
@organizer_required
def compare_page(request: HtmxHttpRequest) -> HttpResponse:
    """Two or more studies, or one study under several filters, side by side."""
    forms_, settings, errors = compare_settings(request)
    context = {"forms": forms_, "errors": errors, "n_chosen": len(settings)}
    if len(settings) >= 2 and not errors:
        result = presenters.compare(settings)
        context.update(
            result=result,
            table=presenters.compare_table(result),
            correlations=presenters.table(pd.DataFrame(result["correlations"]), "correlations"),
        )
    elif any(f.is_bound for f in forms_) and not errors:
        errors.append(_("Choose at least two settings to compare."))
    template = "ranking/compare.html#compare-body" if request.htmx else "ranking/compare.html"
    return render(request, template, context, status=400 if errors and not request.htmx else 200)
