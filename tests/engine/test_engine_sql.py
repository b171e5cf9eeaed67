"""The hot path's kept cursor (engine_sql.cursor): one Django cursor per connection, and still
Django's wrapper around every statement."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import engine_sql


def test_the_cursor_is_kept_while_the_connection_lasts(db):
    first = engine_sql.cursor()
    assert engine_sql.sql("SELECT 1") == [(1,)]
    assert engine_sql.cursor() is first


def test_a_closed_connection_gets_a_new_cursor_and_the_statement_runs(transactional_db):
    before = engine_sql.cursor()
    raw = connection.connection
    connection.close()  # (SQLite's in-memory test database stays open: the same cursor)
    assert engine_sql.sql("SELECT 2") == [(2,)]
    assert (engine_sql.cursor() is before) == (connection.connection is raw)
    if connection.vendor == "postgresql":
        assert connection.connection is not raw


def test_statements_on_the_kept_cursor_are_logged_and_wrapped(db):
    engine_sql.sql("SELECT 3")  # a cursor is kept before the capture starts
    seen: list[str] = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as captured, connection.execute_wrapper(wrapper):
        assert engine_sql.sql("SELECT 4") == [(4,)]
    assert [q["sql"] for q in captured.captured_queries] == ["SELECT 4"]
    assert seen == ["SELECT 4"]
