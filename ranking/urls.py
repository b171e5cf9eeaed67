from __future__ import annotations

from django.urls import path

from ranking import api, views

app_name = "ranking"

urlpatterns = [
    path("studies/<int:study_id>/report/", views.report_page, name="report"),
    path("studies/<int:study_id>/report/charts/", views.report_charts, name="report-charts"),
    path(
        "studies/<int:study_id>/report/download.<str:fmt>",
        views.report_download,
        name="report-download",
    ),
    path("reports/compare/", views.compare_page, name="compare"),
    path("reports/statistics/", views.statistics_page, name="statistics"),
    path("api/studies/<int:study_id>/report/", api.ReportAPI.as_view(), name="api-report"),
    path(
        "api/studies/<int:study_id>/report/<str:table>/",
        api.ReportTableAPI.as_view(),
        name="api-report-table",
    ),
    path("api/reports/compare/", api.CompareAPI.as_view(), name="api-compare"),
]
