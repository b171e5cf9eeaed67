"""Plain-SQL helpers for the annotator hot path (see docs/decisions/annotation.md).

On the 2-core benchmark machine the ORM spent 1-4 ms of CPU compiling each small statement of the
hot path against 0.3 ms for executing it; the engine runs those statements through these helpers
and keeps the ORM for everything else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from django.db import connection, models
from django.db.backends.utils import CursorWrapper


def uses_row_locks() -> bool:
    return bool(connection.features.has_select_for_update_skip_locked)


def lock[M: models.Model](qs: models.QuerySet[M]) -> models.QuerySet[M]:
    return qs.select_for_update(of=("self",)) if uses_row_locks() else qs


def cursor() -> CursorWrapper:
    """The hot path's cursor, kept on the connection while that connection and its logging mode
    last. A new Django cursor (the driver's cursor with its own map of adapters, Django's
    wrapper) costs about a third of a small statement's client CPU, and a submit runs four to
    six. Statements still pass through Django's wrapper: execute wrappers, query logging (a
    CaptureQueriesContext gets a logging cursor of its own), error translation, and the check
    for a broken transaction. A closed or replaced connection gets a new cursor."""
    raw = connection.connection  # None before the first connect and after close()
    kept = getattr(connection, "_hot_cursor", None)
    if (
        kept is not None
        and raw is not None
        and kept[0] is raw
        and kept[1] == connection.queries_logged
    ):
        return cast(CursorWrapper, kept[2])
    fresh = connection.cursor()
    connection._hot_cursor = (connection.connection, connection.queries_logged, fresh)  # type: ignore[attr-defined]
    return fresh


def sql(statement: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[tuple[Any, ...]]:
    c = cursor()
    c.execute(statement, params)
    return c.fetchall() if c.description else []


def for_update() -> str:
    return " FOR UPDATE" if uses_row_locks() else ""


def db_value(model: type[models.Model], field: str, value: Any) -> Any:
    """A parameter prepared as the ORM would store it (datetimes and UUIDs differ per backend)."""
    return model._meta.get_field(field).get_db_prep_value(value, connection)  # type: ignore[union-attr]
