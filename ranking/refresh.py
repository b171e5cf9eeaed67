"""What a report is asked for (``ReportFilters``) and the queueing of its background refresh.

Apart from ``ranking.services`` (which re-exports them) because these need neither the ratings
nor the statistics: what adds ratings in bulk (an import, a finished judge run) queues a
refresh without loading the report stack (pandas, SciPy, numba: about 2.5 CPU s; config/lazy.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache

from ranking.tasks import report_refresh as job

# At most one background refresh per study and filters in this many seconds.
REFRESH_SECONDS = 60


@dataclass(frozen=True)
class ReportFilters:
    """What the organizer narrowed the report to. Empty tuples and ``None`` mean "no filter"."""

    pools: tuple[str, ...] = ()
    criteria: tuple[str, ...] = ()
    task_types: tuple[str, ...] = ()
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    min_accuracy: float | None = None
    min_consistency: float | None = None
    min_ratings: int = 5
    exclude_simulated: bool = False
    options: tuple[tuple[str, Any], ...] = field(default=())

    @classmethod
    def build(
        cls,
        *,
        pools: Iterable[str] = (),
        criteria: Iterable[str] = (),
        task_types: Iterable[str] = (),
        start: dt.datetime | dt.date | None = None,
        end: dt.datetime | dt.date | None = None,
        min_accuracy: float | None = None,
        min_consistency: float | None = None,
        min_ratings: int | None = None,
        exclude_simulated: bool = False,
        **options: Any,
    ) -> ReportFilters:
        # The default tie rule is left implicit so that existing snapshot keys stay valid.
        if options.get("bt_ties") in (None, "", "half"):
            options.pop("bt_ties", None)
        return cls(
            pools=tuple(sorted(set(pools or ()))),
            criteria=tuple(sorted(set(criteria or ()))),
            task_types=tuple(sorted(set(task_types or ()))),
            start=_as_datetime(start),
            end=_as_datetime(end, end_of_day=True),
            min_accuracy=min_accuracy,
            min_consistency=min_consistency,
            min_ratings=5 if min_ratings is None else int(min_ratings),
            exclude_simulated=bool(exclude_simulated),
            options=tuple(sorted(options.items())),
        )

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReportFilters:
        """The filters back from ``as_dict`` (how a background refresh receives them)."""
        d = dict(d)
        options = d.pop("options", None) or {}
        for key in ("start", "end"):
            if d.get(key):
                d[key] = dt.datetime.fromisoformat(d[key])
        return cls.build(**d, **options)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["options"] = dict(self.options)
        for key in ("start", "end"):
            d[key] = d[key].isoformat() if d[key] else None
        for key in ("pools", "criteria", "task_types"):
            d[key] = list(d[key])
        return d

    def build_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``ranking.stats.report.build_report``."""
        return {
            "pools": list(self.pools) or None,
            "criteria": list(self.criteria) or None,
            "task_types": list(self.task_types) or None,
            "start": self.start,
            "end": self.end,
            "min_accuracy": self.min_accuracy,
            "min_consistency": self.min_consistency,
            "min_ratings": self.min_ratings,
            **dict(self.options),
        }

    def cache_token(self) -> str:
        raw = json.dumps(self.as_dict(), sort_keys=True, default=str)
        return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _as_datetime(value, *, end_of_day: bool = False) -> dt.datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):
        # A date range is inclusive of its last day: the statistics' end bound is exclusive, so
        # the end date becomes the following midnight; the last day there is bounds nothing.
        if end_of_day and value >= dt.date.max:
            return None
        day = value + dt.timedelta(days=1) if end_of_day else value
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    raise TypeError(f"Not a date or datetime: {value!r}")


def _refresh_guard(study_id: int, filters: ReportFilters) -> str:
    return f"ranking:report-refresh:{study_id}:{filters.cache_token()}"


def refresh_pending(study_id: int, filters: ReportFilters) -> bool:
    """Whether a refresh of (study, filters) was queued in the last ``REPORT_REFRESH_SECONDS``
    (a job that failed or found no worker stops counting when the interval ends)."""
    return cache.get(_refresh_guard(study_id, filters)) is not None


def report_refresh_soon(
    *, study_id: int, filters: ReportFilters | None = None, force: bool = False
) -> bool:
    """Ask the task queue for a fresh snapshot of the study's report (default filters unless
    given), at most once per ``settings.REPORT_REFRESH_SECONDS`` per study and filters. Cheap
    (one cache ``add``), so ratings can call it on every submit. True when a job was queued.
    ``force`` queues one even inside the interval (new ratings in bulk, ``reports_warm``)."""
    filters = filters or ReportFilters()
    seconds = int(getattr(settings, "REPORT_REFRESH_SECONDS", REFRESH_SECONDS))
    guard = _refresh_guard(study_id, filters)
    if force:
        cache.set(guard, True, seconds)
    elif not cache.add(guard, True, seconds):
        return False
    job.enqueue(study_id, filters.as_dict())
    return True
