"""Report tables shaped for templates: headers and formatted rows, leaderboards side by side, the
correlation matrix, and the comparison across settings. Shared by the pages and the API."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
from django.utils import translation
from django.utils.text import capfirst, format_lazy
from django.utils.translation import gettext_lazy as _

from ranking import formatting
from ranking.services import ReportFilters, StudyReport, report_build
from ranking.stats.rankings import correlation_table
from ranking.stats.report import jsonable

ROW_LIMIT = 200

# Leaderboard sources: (report table, value column, short name, higher is better).
LEADERBOARDS = {
    "star": ("leaderboard_star", "mean"),
    "total": ("leaderboard_total", "total"),
    "points": ("leaderboard_points", "score"),
    "elo": ("leaderboard_elo", "elo"),
    "bt": ("leaderboard_bt", "rating"),
}


# How each leaderboard's values are written, and its column title.
SOURCE_KINDS = {"star": "number", "total": "total", "points": "share", "elo": "elo", "bt": "elo"}
SOURCE_LABELS = {
    "star": _("Mean stars"),
    "total": _("Total /100"),
    "points": _("Points"),
    "elo": _("Elo"),
    "bt": _("Bradley-Terry"),
}
# Rater kinds as the leaderboard column titles name them ("Elo / human").
KIND_LABELS = {"human": _("human"), "judge": _("judge"), "all": _("all")}

# Codes in the report's tables (rater kinds, pools, modes...) in the page's words, per column.
# Only the page shows these: the downloads and the API keep the codes as data. A value not
# listed (a pseudonym, a model, a criterion) is shown as it is.
_POOLS = {
    "onsite": _("onsite"),
    "crowd": _("crowd"),
    "public": _("public"),
    "judge": _("LLM judge"),
}
_RATER_KINDS = {"human": _("human"), "judge": _("LLM judge"), "all": _("all raters")}
_HUMANS = {"humans": _("all humans")}  # every human rater pooled, beside each judge's row
_CHOICES = {"tie": _("tie"), "both_bad": _("both bad")}
CODE_LABELS: dict[str, dict[str, Any]] = {
    "rater_kind": _RATER_KINDS,
    "kind_a": _RATER_KINDS,
    "kind_b": _RATER_KINDS,
    "pool": {**_POOLS, "all": _("all raters")},
    "raters": {**_POOLS, "all": _("all raters"), **_HUMANS},
    "mode": {"star": _("stars"), "pairwise": _("pairwise")},
    "group_by": {
        **_HUMANS,
        "judge": _("LLM judge"),
        "pool": _("pool"),
        "rater_kind": _("rater kind"),
        "rater_id": _("rater"),
    },
    # group names a pool, a rater kind, a judge (pseudonym) or "all" of the humans.
    "group": {**_POOLS, **_RATER_KINDS, **_HUMANS, "all": _("all")},
    "judge": {"judge": _("all judges")},  # ranking_agreement: the judges pooled
    "dimension": {"criterion": _("criterion"), "task_type": _("task type")},
    "metric": {"score": _("score"), "accuracy": _("accuracy")},
    "level": {"nominal": _("nominal"), "ordinal": _("ordinal"), "interval": _("interval")},
    "variant": {
        "paper": _("paper"),
        "leave_one_out": _("leave one out"),
        "humans_only": _("humans only"),
    },
    "statistic": {
        "fleiss_kappa": _("Fleiss κ"),
        "alpha_nominal": _("Krippendorff α (nominal)"),
        "alpha_ordinal": _("Krippendorff α (ordinal)"),
        "alpha_interval": _("Krippendorff α (interval)"),
    },
    "criterion": {"overall": _("overall"), "pairwise": _("pairwise choice")},
    # ranking_agreement: which ranking the human and the judge orders come from.
    "ranking": {"star_mean": SOURCE_LABELS["star"], "points": SOURCE_LABELS["points"]},
    "truth": _CHOICES,
    "predicted": _CHOICES,
}
# Rankings named "source/kind" (the correlations): "Elo / human", as the leaderboard titles.
RANKING_LABELS = {
    f"{source}/{kind}": format_lazy("{} / {}", SOURCE_LABELS[source], KIND_LABELS[kind])
    for source in SOURCE_LABELS
    for kind in KIND_LABELS
}
CODE_LABELS["ranking_a"] = CODE_LABELS["ranking_b"] = RANKING_LABELS


def label(column: str, value: Any) -> Any:
    """A code of ``column`` in the page's words; any other value unchanged."""
    words = CODE_LABELS.get(column)
    if words is not None and isinstance(value, str) and value in words:
        return str(words[value])
    return value


def fmt(value: Any, digits: int = 3) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, bool):
        return str(_("yes")) if value else str(_("no"))
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        if value.is_integer() and abs(value) >= 1000:
            return f"{value:.0f}"
        return f"{value:.{digits}f}"
    return str(value)


@dataclass
class Table:
    name: str
    columns: list[str]
    rows: list[list[str]]
    total_rows: int
    numeric: list[bool] | None = None  # per column: right-align (numbers)

    @property
    def truncated(self) -> bool:
        return self.total_rows > len(self.rows)

    @property
    def cells(self) -> list[list[tuple[str, bool]]]:
        """Rows as (text, is_number) pairs for the template."""
        numeric = self.numeric or [
            i > 0 and all(_looks_numeric(r[i]) for r in self.rows) for i in range(len(self.columns))
        ]
        return [list(zip(row, numeric, strict=False)) for row in self.rows]


def _looks_numeric(text: str) -> bool:
    head = text.split(" ", 1)[0].replace("∞", "1").lstrip("-")
    return head == "" or head.replace(".", "", 1).isdigit()


def table(df: pd.DataFrame | None, name: str = "", *, limit: int | None = ROW_LIMIT) -> Table:
    """A DataFrame as text cells (autoescaped by the template like any other string), with
    human headers and the page's precision (``ranking.formatting``); downloads keep full
    precision and the column names."""
    if df is None or not isinstance(df, pd.DataFrame) or df.empty:
        columns = [] if df is None else [formatting.header(str(c)) for c in df.columns]
        return Table(name, columns, [], 0)
    shown = df if limit is None else df.head(limit)
    records = jsonable(shown)
    kinds = [formatting.kind_of(str(c), name) for c in df.columns]
    names = [str(c) for c in df.columns]
    rows = [
        [
            formatting.number(label(c, v), k)
            for v, c, k in zip(r.values(), names, kinds, strict=True)
        ]
        for r in records
    ]
    numeric = [
        pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
        for c in df.columns
    ]
    columns = [formatting.header(str(c)) for c in df.columns]
    return Table(name, columns, rows, len(df), numeric)


def _series(report_tables: dict, source: str, kind: str, criterion: str = "overall") -> pd.Series:
    name, col = LEADERBOARDS[source]
    df = report_tables.get(name)
    needed = {col, "rater_kind", "model"} | ({"criterion"} if source == "star" else set())
    if not isinstance(df, pd.DataFrame) or df.empty or not needed <= set(df.columns):
        return pd.Series(dtype=float)
    df = df[df["rater_kind"].astype(str) == kind]
    if source == "star":
        df = df[df["criterion"].astype(str) == criterion]
    return df.set_index(df["model"].astype(str))[col].astype(float)


def _board_cell(s: pd.Series, model: str, number_kind: str, bt: pd.DataFrame | None) -> str:
    """ "value (rank)" of one model in one leaderboard column; Bradley-Terry adds its interval."""
    if model not in s.index or pd.isna(s[model]):
        return ""
    rank = int(s.rank(ascending=False, method="min")[model])
    cell = f"{formatting.number(float(s[model]), number_kind)} ({rank})"
    if bt is not None:
        r = bt[bt["model"].astype(str) == model]
        if len(r) and {"ci_low", "ci_high"} <= set(r.columns) and pd.notna(r["ci_low"].iloc[0]):
            lo, hi = float(r["ci_low"].iloc[0]), float(r["ci_high"].iloc[0])
            cell += f" [{lo:.0f}, {hi:.0f}]"
    return cell


def side_by_side(report: StudyReport) -> Table:
    """One row per model: every leaderboard the report has, per rater kind, as "value (rank)".

    Rows follow the first column's order. Bradley-Terry shows its bootstrap interval too. Each
    column writes its values the way its leaderboard needs (``SOURCE_KINDS``).
    """
    columns: list[tuple[str, pd.Series, str, pd.DataFrame | None]] = []
    for source, (name, _col) in LEADERBOARDS.items():
        if source == "total" and report.study.rubric.key != "llmeval2":
            continue
        df = report.table(name)
        if df.empty or "rater_kind" not in df.columns:
            continue
        kinds = [k for k in ("human", "judge", "all") if k in set(df["rater_kind"].astype(str))]
        # "all" repeats a single kind; show it only when both kinds are present.
        if len(kinds) == 2:
            kinds = [k for k in kinds if k != "all"]
        for kind in kinds:
            s = _series(report.tables, source, kind)
            if len(s):
                sub = df[df["rater_kind"].astype(str) == kind] if source == "bt" else None
                label = f"{SOURCE_LABELS[source]} / {KIND_LABELS[kind]}"
                columns.append((label, s, SOURCE_KINDS[source], sub))
    if not columns:
        return Table("leaderboards", [], [], 0)
    models = list(columns[0][1].sort_values(ascending=False).index)
    for _label, s, _kind, _bt in columns[1:]:
        models += [m for m in s.sort_values(ascending=False).index if m not in models]
    rows = [[m, *(_board_cell(s, m, k, bt) for _label, s, k, bt in columns)] for m in models]
    return Table("leaderboards", [str(_("Model")), *[c[0] for c in columns]], rows, len(rows))


def star_by_criterion(report: StudyReport, kind: str) -> Table:
    """Mean stars per model (rows) and criterion (columns) for one rater kind, named by the
    kind in the page's words (the page titles the table with it)."""
    name = str(KIND_LABELS.get(kind, kind))
    df = report.table("leaderboard_star")
    if df.empty or not {"rater_kind", "model", "criterion", "mean"} <= set(df.columns):
        return Table(name, [], [], 0)
    df = df[df["rater_kind"].astype(str) == kind]
    if df.empty:
        return Table(name, [], [], 0)
    wide = df.pivot_table(index="model", columns="criterion", values="mean", observed=True)
    wide.index = wide.index.astype(str)
    wide.columns = [str(c) for c in wide.columns]
    cols = [c for c in wide.columns if c != "overall"] + (
        ["overall"] if "overall" in wide.columns else []
    )
    wide = wide[cols].sort_values(cols[-1], ascending=False)
    rows = [
        [m, *(formatting.number(v) for v in r)]
        for m, r in zip(wide.index, wide.to_numpy(), strict=True)
    ]
    labels = criterion_labels(report)
    headers = [str(_("Model")), *(labels.get(c) or formatting.header(c) for c in cols)]
    return Table(name, headers, rows, len(rows))


def criterion_labels(report: StudyReport) -> dict[str, str]:
    """The criteria's names as the rubric gives them in the page's language ("有用性" on Chinese
    pages, "Helpfulness" on English ones), and "overall" in words."""
    zh = (translation.get_language() or "").startswith("zh")
    labels = {
        c.key: (c.label_zh if zh else "") or c.label_en for c in report.study.rubric.criteria.all()
    }
    return {**labels, "overall": capfirst(str(CODE_LABELS["criterion"]["overall"]))}


def correlation_matrix(report: StudyReport) -> Table:
    """Spearman rho above the diagonal, Kendall tau-b below it."""
    df = report.table("correlations")
    if df.empty or not {"ranking_a", "ranking_b", "spearman_rho", "kendall_tau_b"} <= set(
        df.columns
    ):
        return Table("correlations", [], [], 0)
    names = list(dict.fromkeys([*df["ranking_a"].astype(str), *df["ranking_b"].astype(str)]))
    cell: dict[tuple[str, str], str] = {}
    for r in df.itertuples(index=False):
        a, b = str(r.ranking_a), str(r.ranking_b)
        cell[(a, b)] = formatting.number(r.spearman_rho)
        cell[(b, a)] = formatting.number(r.kendall_tau_b)
    rows = [
        [label("ranking_a", a), *("—" if a == b else cell.get((a, b), "") for b in names)]
        for a in names
    ]
    # Every column but the first holds numbers: an undefined ρ or τ (tied rankings, fewer than
    # two models) is then marked and explained like any undefined cell, not left blank.
    numeric = [False, *(True for _ in names)]
    columns = ["", *(label("ranking_a", b) for b in names)]
    return Table("correlations", columns, rows, len(rows), numeric)


def dict_table(d: dict | None, name: str) -> Table:
    """A dict of dicts (e.g. ``elo_variance`` per rater kind) as rows."""
    if not d:
        return Table(name, [], [], 0)
    keys: list[str] = []
    for v in d.values():
        if isinstance(v, dict):
            keys += [k for k in v if k not in keys]
    rows = [
        [
            label("rater_kind", str(k)),
            *(formatting.number(v.get(c), formatting.kind_of(c, name)) for c in keys),
        ]
        for k, v in d.items()
        if isinstance(v, dict)
    ]
    return Table(name, ["", *(formatting.header(c) for c in keys)], rows, len(rows))


# --------------------------------------------------------------------------- comparison


@dataclass
class Setting:
    study: Any
    filters: ReportFilters
    ranking: str
    kind: str
    label: str


def compare(settings: list[Setting]) -> dict[str, Any]:
    """Rankings of 2+ settings side by side and Spearman / Kendall between every two of them."""
    series: dict[str, pd.Series] = {}
    columns: list[dict[str, Any]] = []
    for i, s in enumerate(settings, start=1):
        label = s.label if s.label not in series else f"{s.label} #{i}"
        report = report_build(study=s.study, filters=s.filters)
        values = _series(report.tables, s.ranking, s.kind).dropna()
        series[label] = values
        ranks = values.rank(ascending=False, method="min")
        columns.append(
            {
                "label": label,
                "study": {"id": s.study.pk, "name": s.study.name},
                "ranking": s.ranking,
                "kind": s.kind,
                "filters": s.filters.as_dict(),
                "rows": [
                    {"model": m, "value": float(v), "rank": int(ranks[m])}
                    for m, v in values.sort_values(ascending=False).items()
                ],
            }
        )
    corr = correlation_table(series) if len(series) > 1 else pd.DataFrame()
    models: list[str] = []
    for c in columns:
        models += [r["model"] for r in c["rows"] if r["model"] not in models]
    return {"settings": columns, "models": models, "correlations": jsonable(corr)}


def compare_table(result: dict[str, Any]) -> Table:
    cols = result["settings"]
    lookup = [{r["model"]: r for r in c["rows"]} for c in cols]
    rows = []
    for m in result["models"]:
        row = [m]
        for lk, c in zip(lookup, cols, strict=True):
            r = lk.get(m)
            # Written as the report page writes the same leaderboard (Points as a share, Elo
            # whole, the total to two decimals), so the two pages show the same figure.
            value = formatting.number(r["value"], SOURCE_KINDS[c["ranking"]]) if r else ""
            row.append(f"{value} ({r['rank']})" if r else "")
        rows.append(row)
    return Table("compare", [str(_("model")), *[c["label"] for c in cols]], rows, len(rows))
