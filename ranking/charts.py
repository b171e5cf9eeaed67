"""Server-side charts of the report, drawn with matplotlib (Agg, no pyplot state) as SVG.

Each function takes report tables and returns an SVG document as text, or ``None`` when there is
nothing to draw. Text stays text in the SVG (``svg.fonttype = none``) so Chinese model names are
drawn by the browser's fonts and the files stay small. Pages embed the SVG as an ``<img>`` data
URI (``as_data_uri``): an SVG loaded as an image can run no script, whatever text it carries.
"""

from __future__ import annotations

import base64
import io
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from django.utils.translation import gettext as _  # noqa: E402
from matplotlib.backends.backend_svg import FigureCanvasSVG  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

# Text stays text in the SVG and the browser draws it (Chinese too); matplotlib only measures it
# and would warn once per Chinese character its own font lacks.
warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)

POOL_ORDER = ("onsite", "crowd", "public", "judge")
PALETTE = ("#0969da", "#1a7f37", "#9a6700", "#cf222e", "#8250df", "#bf3989", "#1b7c83", "#656d76")
_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "llmeval-report",
    # Names (models, judges, raters) are untrusted text, never mathtext: "$" is a dollar sign, and
    # a name like "$\\frac$" does not stop the charts with a parse error.
    "text.parse_math": False,
    "font.family": ["sans-serif"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        FigureCanvasSVG(fig).print_svg(buf, metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def as_data_uri(svg: str | None) -> str | None:
    if not svg:
        return None
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def _has(df: pd.DataFrame, *columns: str) -> bool:
    """The table is non-empty and has the columns a chart needs (robust to a changed layout)."""
    return isinstance(df, pd.DataFrame) and not df.empty and set(columns) <= set(df.columns)


def word(code: str) -> str:
    """A code of the tables (pool, rater kind, mode) in the page's language, as the report's
    tables say it; any other text as it is."""
    words = {
        "onsite": _("onsite"), "crowd": _("crowd"), "public": _("public"),
        "judge": _("judge"), "human": _("human"), "all": _("all"),
        "star": _("star"), "pairwise": _("pairwise"),
    }  # fmt: skip
    return words.get(code, code)


def table_word(column: str, code: str) -> str:
    """A code of ``column`` (pool, mode...) in the words the report's tables use for it, in the
    page's language (``ranking.presenters.label``); any other value as it is."""
    from ranking.presenters import label  # presenters -> services -> charts

    return str(label(column, code))


def _pool_key(pool: str) -> tuple[int, str]:
    return (POOL_ORDER.index(pool) if pool in POOL_ORDER else len(POOL_ORDER), pool)


def box_by_pool(by_rater: pd.DataFrame, value: str, title: str) -> str | None:
    """Figure 3: one box per (mode, pool) of the per-rater ``value`` (accuracy or consistency),
    raters flagged ``excluded`` left out, every rater drawn as a dot over its box."""
    if not _has(by_rater, value, "mode", "pool"):
        return None
    df = by_rater
    if "excluded" in df.columns:
        df = df[~df["excluded"].astype(bool)]
    df = df[df[value].notna()]
    if df.empty:
        return None
    groups = []
    for (mode, pool), g in df.groupby(["mode", "pool"], observed=True, sort=False):
        groups.append(((str(mode), str(pool)), g[value].to_numpy(dtype=float)))
    groups.sort(key=lambda item: (item[0][0], _pool_key(item[0][1])))
    with matplotlib.rc_context(_RC):
        fig = _figure(max(3.2, 0.9 * len(groups) + 1.4), 3.0)
        ax = fig.add_subplot()
        data = [vals for _group, vals in groups]
        ax.boxplot(data, widths=0.55, showfliers=False)
        rng = np.random.default_rng(0)
        for i, vals in enumerate(data, start=1):
            ax.scatter(
                i + rng.uniform(-0.12, 0.12, len(vals)), vals, s=8, alpha=0.55, color=PALETTE[0]
            )
        ax.set_xticks(
            range(1, len(groups) + 1),
            [
                f"{table_word('pool', pool)}\n({table_word('mode', mode)}, n={len(v)})"
                for (mode, pool), v in groups
            ],
        )
        ax.set_ylim(-0.03, 1.03)
        ax.set_ylabel(
            {"accuracy": _("accuracy"), "consistency": _("consistency")}.get(value, value)
        )
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    return _svg(fig)


def leaderboard_bars(
    table: pd.DataFrame, value: str, title: str, *, kinds: Sequence[str] = ("human", "judge", "all")
) -> str | None:
    """Horizontal bars of one leaderboard, one colour per rater kind present."""
    if not _has(table, value, "rater_kind", "model"):
        return None
    present = [k for k in kinds if k in set(table["rater_kind"].astype(str))]
    if not present:
        return None
    shown = present[:2] if len(present) > 1 and "all" in present else present
    order_kind = shown[0]
    base = table[table["rater_kind"].astype(str) == order_kind].sort_values(value)
    models = base["model"].astype(str).tolist()
    if not models:
        return None
    with matplotlib.rc_context(_RC):
        fig = _figure(6.0, max(2.2, 0.22 * len(models) * len(shown) + 0.9))
        ax = fig.add_subplot()
        height = 0.8 / len(shown)
        y = np.arange(len(models))
        for j, kind in enumerate(shown):
            t = table[table["rater_kind"].astype(str) == kind].set_index(
                table[table["rater_kind"].astype(str) == kind]["model"].astype(str)
            )
            vals = [float(t[value].get(m, np.nan)) for m in models]
            ax.barh(y + j * height, vals, height=height, color=PALETTE[j], label=word(kind))
        ax.set_yticks(y + height * (len(shown) - 1) / 2, models)
        ax.set_xlabel({"mean": _("mean stars"), "score": _("share of points")}.get(value, value))
        ax.set_title(title)
        finite = table[value].replace([np.inf, -np.inf], np.nan).dropna()
        if len(finite) and value in ("elo", "rating"):
            ax.set_xlim(float(finite.min()) - 30, float(finite.max()) + 30)
        if len(shown) > 1:
            ax.legend(loc="lower right", frameon=False)
        ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def bradley_terry(table: pd.DataFrame, kind: str = "all") -> str | None:
    """Bradley-Terry ratings (Elo scale) with their bootstrap intervals, best model on top."""
    if not _has(table, "rater_kind", "model", "rating", "ci_low", "ci_high"):
        return None
    t = table[table["rater_kind"].astype(str) == kind]
    if t.empty:
        t = table[table["rater_kind"].astype(str) == str(table["rater_kind"].iloc[0])]
        kind = str(table["rater_kind"].iloc[0])
    t = t.sort_values("rating")
    y = np.arange(len(t))
    rating = t["rating"].to_numpy(dtype=float)
    lo = np.nan_to_num(rating - t["ci_low"].to_numpy(dtype=float), nan=0.0).clip(min=0)
    hi = np.nan_to_num(t["ci_high"].to_numpy(dtype=float) - rating, nan=0.0).clip(min=0)
    with matplotlib.rc_context(_RC):
        fig = _figure(6.0, max(2.2, 0.26 * len(t) + 0.9))
        ax = fig.add_subplot()
        ax.errorbar(
            rating, y, xerr=[lo, hi], fmt="o", color=PALETTE[0], ecolor="#8c959f", capsize=3
        )
        ax.set_yticks(y, t["model"].astype(str).tolist())
        ax.set_xlabel(_("Bradley-Terry rating (Elo scale), 95% bootstrap interval"))
        ax.set_title(_("Bradley-Terry (%(kind)s)") % {"kind": word(kind)})
        ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def _of_kind(df: pd.DataFrame, kind: str) -> tuple[pd.DataFrame, str]:
    """The rows of one rater kind, or of the first kind present when ``kind`` has none."""
    t = df[df["rater_kind"].astype(str) == kind]
    if t.empty:
        kind = str(df["rater_kind"].iloc[0])
        t = df[df["rater_kind"].astype(str) == kind]
    return t, kind


def elo_trajectory(traj: pd.DataFrame, kind: str = "all", *, top: int = 8) -> str | None:
    """Figure 5: every model's Elo rating over the last rounds (top models by final rating)."""
    if not _has(traj, "rater_kind", "round", "model", "rating"):
        return None
    t, kind = _of_kind(traj, kind)
    last = t[t["round"] == t["round"].max()].sort_values("rating", ascending=False)
    models = last["model"].astype(str).head(top).tolist()
    with matplotlib.rc_context(_RC):
        fig = _figure(6.4, 3.2)
        ax = fig.add_subplot()
        for j, m in enumerate(models):
            g = t[t["model"].astype(str) == m].sort_values("round")
            ax.plot(g["round"], g["rating"], color=PALETTE[j % len(PALETTE)], lw=1.2, label=m)
        ax.set_xlabel(_("match (time order)"))
        ax.set_ylabel(_("Elo rating"))
        n = t["round"].nunique() - 1
        ax.set_title(_("Elo over the last %(n)d matches (%(kind)s)") % {"n": n, "kind": word(kind)})
        ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
        ax.grid(alpha=0.3)
    return _svg(fig)


def elo_shuffles(shuffles: pd.DataFrame, kind: str = "all") -> str | None:
    """Figure 6: the spread of each model's final Elo over shuffled orders of the same matches."""
    if not _has(shuffles, "rater_kind", "shuffle", "model", "rating"):
        return None
    t, kind = _of_kind(shuffles, kind)
    order = t.groupby("model", observed=True)["rating"].median().sort_values().index
    data = [t.loc[t["model"] == m, "rating"].to_numpy(dtype=float) for m in order]
    n_shuffles = t["shuffle"].nunique()
    with matplotlib.rc_context(_RC):
        fig = _figure(6.0, max(2.2, 0.26 * len(order) + 0.9))
        ax = fig.add_subplot()
        ax.boxplot(data, orientation="horizontal", widths=0.6, showfliers=True)
        ax.set_yticks(range(1, len(order) + 1), [str(m) for m in order])
        ax.set_xlabel(_("final Elo rating"))
        title = _("Elo over %(n)d shuffles of the same matches (%(kind)s)")
        ax.set_title(title % {"n": n_shuffles, "kind": word(kind)})
        ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def report_charts(tables: dict) -> dict[str, str | None]:
    """Every chart of the report page, as SVG text (``None`` where a table is empty)."""

    def table(name: str) -> pd.DataFrame:
        value = tables.get(name)
        return value if isinstance(value, pd.DataFrame) else pd.DataFrame()

    star = table("leaderboard_star")
    if _has(star, "criterion"):
        star = star[star["criterion"].astype(str) == "overall"]
    return {
        "accuracy": box_by_pool(table("accuracy_by_rater"), "accuracy", _("Accuracy per pool")),
        "consistency": box_by_pool(
            table("consistency_by_rater"), "consistency", _("Consistency per pool")
        ),
        "star": leaderboard_bars(star, "mean", _("Mean stars (overall)")),
        "points": leaderboard_bars(
            table("leaderboard_points"), "score", _("Points (points / games)")
        ),
        "bt": bradley_terry(table("leaderboard_bt")),
        "elo_trajectory": elo_trajectory(table("elo_trajectory")),
        "elo_shuffles": elo_shuffles(table("elo_shuffles")),
    }
