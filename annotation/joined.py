"""Joined reads compiled once: the annotator hot path's select_related, without the ORM compiling
the same eight-table query again on every request.

On the 2-core benchmark machine the ORM spent about 3 ms of CPU building and running
`Assignment.objects.select_related(<7 relations>).get(public_id=...)`, of which 0.3 ms is the
database round trip; the annotator page and the submit POST each need such a read. A JoinedRead
writes the SELECT from the models' metadata once per process, then only executes it (with psycopg
prepared statements on PostgreSQL) and builds the model instances with `Model.from_db`, applying
the same database converters the ORM would, and attaches them as the ORM's select_related does.
The instances are ordinary models: saving, relations and templates behave as usual.

Use it for a few hot, fixed-shape reads only (see docs/decisions/annotation.md); everything else
goes through the ORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.db import connection, models
from django.db.models.expressions import Col

from annotation import engine_sql


@dataclass(frozen=True)
class Part:
    alias: str
    model: type[models.Model]
    # "alias.field" this model is attached to (None: the root), and whether the join may be empty.
    attach_to: str | None = None
    outer: bool = False


def _column(field: models.Field) -> str:
    if field.column is None:  # only non-concrete fields lack a column
        raise TypeError(f"{field} has no column")
    return field.column


def _forward_fk(model: type[models.Model], name: str) -> models.ForeignKey:
    """The forward relation a part is attached through (a configuration error otherwise)."""
    field = model._meta.get_field(name)
    if not isinstance(field, models.ForeignKey):
        raise TypeError(f"{model.__name__}.{name} is not a foreign key")
    return field


class JoinedRead:
    def __init__(
        self,
        parts: list[Part],
        where: str,
        where_fields: list[models.Field],
        *,
        extra: dict[str, str] | None = None,
        lock: str = "",
    ):
        self.parts = parts
        self.where = where  # SQL with %s placeholders, over the aliases
        self.where_fields = where_fields  # prepares each parameter as the ORM would
        # name -> SQL expression over the aliases (no parameters): set on the root instance under
        # that name, as the ORM's annotate() does.
        self.extra = extra or {}
        # The alias whose row the read locks (FOR UPDATE OF it) where the database has row locks.
        self.lock = lock

    @cached_property
    def columns(self) -> list[str]:
        """The parts' columns in the select list, in the order instances() reads them."""
        qn = connection.ops.quote_name
        return [
            f"{part.alias}.{qn(_column(f))}"
            for part in self.parts
            for f in part.model._meta.concrete_fields
        ]

    @cached_property
    def joins(self) -> str:
        """The joins of the parts after the root, over the root's alias."""
        qn = connection.ops.quote_name
        by_alias = {p.alias: p for p in self.parts}
        joins = []
        for part in self.parts[1:]:
            if part.attach_to is None:
                raise TypeError(f"part {part.alias} is attached to nothing")
            parent_alias, field_name = part.attach_to.split(".")
            fk = _forward_fk(by_alias[parent_alias].model, field_name)
            kind = "LEFT OUTER JOIN" if part.outer else "INNER JOIN"
            joins.append(
                f"{kind} {qn(part.model._meta.db_table)} {part.alias} ON "
                f"{part.alias}.{qn(_column(part.model._meta.pk))} = "
                f"{parent_alias}.{qn(_column(fk))}"
            )
        return " ".join(joins)

    @cached_property
    def sql(self) -> str:
        qn = connection.ops.quote_name
        root = self.parts[0]
        source = f"{qn(root.model._meta.db_table)} {root.alias}"
        columns = [*self.columns, *self.extra.values()]
        lock = ""
        if self.lock and connection.features.has_select_for_update_of:
            lock = f" FOR UPDATE OF {self.lock}"
        return f"SELECT {', '.join(columns)} FROM {source} {self.joins} WHERE {self.where}{lock}"

    def select_over(self, source: str, lead: list[str]) -> str:
        """The same columns (after `lead`) and joins over `source`, which names the root's alias
        (a CTE of the caller's statement, say); instances(row, len(lead)) reads its row."""
        return f"SELECT {', '.join([*lead, *self.columns])} FROM {source} {self.joins}"

    @cached_property
    def _converters(self) -> list[list[tuple[int, list, Col]]]:
        """Per part: (column position, converters, column expression), as the compiler does."""
        out = []
        for part in self.parts:
            convs = []
            for pos, field in enumerate(part.model._meta.concrete_fields):
                col = field.get_col(part.alias)
                fns = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
                if fns:
                    convs.append((pos, fns, col))
            out.append(convs)
        return out

    def get(self, *params: object) -> models.Model | None:
        """The root instance with its related instances attached (and the extra values set on
        it), or None if no row matches."""
        values = [
            f.get_db_prep_value(v, connection)
            for f, v in zip(self.where_fields, params, strict=True)
        ]
        cursor = engine_sql.cursor()
        cursor.execute(self.sql, values)
        row = cursor.fetchone()
        if row is None:
            return None
        root = self.instances(row)
        if root is not None:
            for name, value in zip(self.extra, row[len(self.columns) :], strict=True):
                setattr(root, name, value)
        return root

    def instances(self, row: Sequence[Any], start: int = 0) -> models.Model | None:
        """The root instance built from the parts' columns of `row` from position `start`."""
        instances: dict[str, models.Model | None] = {}
        for part, convs in zip(self.parts, self._converters, strict=True):
            fields = part.model._meta.concrete_fields
            values = list(row[start : start + len(fields)])
            start += len(fields)
            if values[fields.index(part.model._meta.pk)] is None:  # an empty outer join
                instances[part.alias] = None
            else:
                for pos, fns, col in convs:
                    for fn in fns:
                        values[pos] = fn(values[pos], col, connection)
                instances[part.alias] = part.model.from_db(
                    connection.alias, [f.attname for f in fields], values
                )
            if part.attach_to is not None:
                parent_alias, field_name = part.attach_to.split(".")
                parent = instances[parent_alias]
                if parent is not None:
                    # What select_related does: fill the forward relation's cache.
                    fk = _forward_fk(type(parent), field_name)
                    fk.set_cached_value(parent, instances[part.alias])
        return instances[self.parts[0].alias]
