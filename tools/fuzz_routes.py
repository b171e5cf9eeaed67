"""Fuzz every route the URL resolver knows: any 5xx is a bug.

Runs under pytest (a throw-away test database with the usual fixtures) and prints each request
that answered 500 or raised, with its traceback's last lines. Each route is opened

- anonymously, as an onsite annotator, as organizer Bob (on organizer Alice's objects) and as
  Alice herself;
- with its path arguments filled with Alice's objects, and with hostile ones (ids beyond 2**63,
  NUL, invalid UTF-8, a lone surrogate, Unicode digits, 5,000 characters);
- by GET with hostile query strings (every form field name found on the page, duplicated
  parameters), and by POST with hostile form fields, JSON of the wrong shape, JSON sent as
  text/plain, raw invalid bytes, an empty body and a multipart body of many parts.

Usage:
    .venv/bin/python tools/fuzz_routes.py [--only SUBSTRING] [--quick]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/fuzz .venv/bin/python tools/fuzz_routes.py

Exit status 1 when any request answered 5xx.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="fuzz only routes whose name contains this")
    parser.add_argument("--quick", action="store_true", help="fewer payloads per route")
    args = parser.parse_args(argv)
    os.environ["FUZZ_ONLY"] = args.only
    os.environ["FUZZ_QUICK"] = "1" if args.quick else ""
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    import pytest

    return pytest.main(
        [__file__, "-q", "-s", "-p", "no:cacheprovider", "-W", "ignore", "-p", "no:logging"]
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())


# -- Under pytest --------------------------------------------------------------------------------

if __name__ != "__main__":  # the shared fixtures (users, fast hashing, an empty cache)
    from tests.conftest import *  # noqa: F403

HOSTILE = [
    "",
    "\x00",
    "a\x00b",
    "\udcff",
    "١٢",
    "５",
    "1e309",
    "-0",
    "NaN",
    "Infinity",
    str(2**70),
    str(2**63),
    "-" + str(2**63 + 1),
    "x" * 5000,
    "=cmd|'/c calc'!A1",
    "../../etc/passwd",
    "{{ settings.SECRET_KEY }}",
    "9999-12-31",  # the last date there is: the day after it is out of range
    "0001-01-01",
]
QUICK = ["\x00", "\udcff", "١٢", str(2**70), "1e309", "x" * 5000, "9999-12-31"]
PATH_INTS = [str(2**63), str(2**64 + 5), "9" * 40, "0"]
PATH_STRS = ["%00", "%FF%FE", "%ED%A0%80", "%D9%A1%D9%A2", "x" * 3000, "..%2F..%2Fsettings"]
JSON_BODIES = [
    "[]",
    "null",
    '"text"',
    "1e309",
    '{"a": NaN}',
    '{"x": "\\ud800"}',
    "{" * 5000,
]
HTMX = {"HX-Request": "true", "HX-Current-URL": "http://testserver/%FF", "HX-Target": "x"}
FIELD_RE = re.compile(r'name="([A-Za-z0-9_\-\.\[\]]+)"')


def _pattern_routes():
    from django.urls import get_resolver

    from tests.organizer_side.test_url_sweep import _routes

    only = os.environ.get("FUZZ_ONLY", "")
    return [r for r in _routes(get_resolver().url_patterns) if only in r.name]


class Fuzzer:
    def __init__(self, clients, alice):
        from django.core.signals import got_request_exception

        self.clients = clients
        self.alice = alice
        self.failures: list[str] = []
        self.count = 0
        self._last_exc: list[str] = []
        got_request_exception.connect(self._on_exception, weak=False)

    def _on_exception(self, sender, request=None, **kw):
        import traceback

        self._last_exc.append("".join(traceback.format_exc().splitlines(True)[-6:]))

    def send(self, who, method, url, **kw):
        self._last_exc.clear()
        self.count += 1
        try:
            response = getattr(self.clients[who], method)(url, **kw)
            status = response.status_code
        except Exception as exc:  # noqa: BLE001 - a crash of the client is a finding too
            status = f"raised {type(exc).__name__}: {str(exc)[:200]}"
        if not isinstance(status, int) or status >= 500:
            desc = {k: (repr(v)[:120]) for k, v in kw.items()}
            trace = self._last_exc[-1] if self._last_exc else ""
            self.failures.append(f"{status} {who} {method.upper()} {url[:200]} {desc}\n{trace}")

    def fields(self, who, url):
        """Input names on the page (forms), for the hostile GET and POST."""
        try:
            response = self.clients[who].get(url)
        except Exception:  # noqa: BLE001
            return set()
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            return set()
        return set(FIELD_RE.findall(response.content.decode("utf-8", "replace")))


def _setup(organizer, other_organizer):
    """Clients by identity, Alice's objects and the values of the annotator routes."""
    from django.test import Client

    from annotation.models import Rater
    from tests.factories import make_study
    from tests.organizer_side.test_url_sweep import alice_objects

    alice = alice_objects.__wrapped__(organizer)
    crowd = make_study(owner=organizer, admit_crowd=True, admit_public=True, n_questions=6)
    clients = {"anon": Client(), "alice": Client(), "bob": Client(), "annotator": Client(),
               "crowd": Client(REMOTE_ADDR="203.0.113.5")}  # fmt: skip
    clients["alice"].force_login(organizer)
    clients["bob"].force_login(other_organizer)
    from django.contrib.auth.models import User

    user = User.objects.create_user("fuzz-annotator", password="x-pass-123456")
    Rater.objects.create(kind="human", pool="onsite", user=user, invited_by=organizer)
    clients["annotator"].force_login(user)
    from tests.engine.conftest import crowd_enter

    crowd_enter(clients["crowd"], crowd, {"PROLIFIC_PID": "fuzz-worker"})
    for c in clients.values():
        c.raise_request_exception = False
    values = {"study_pid": crowd.public_id, "uidb64": "MQ", "token": "abc-def"}
    return clients, alice, values


def _fill(route, alice, values):
    from tests.organizer_side import test_url_sweep as sweep

    spec = {**sweep.KWARGS, **sweep.PER_ROUTE.get(route.name, {}),
            **sweep.SHARED.get(route.name, {})}  # fmt: skip
    out = {}
    for k in route.kwargs:
        out[k] = values[k] if k in values else getattr(alice, spec[k], spec[k])
    return out


def _url(pattern: str, kwargs: dict) -> str:
    url = "/" + pattern
    for k, v in kwargs.items():
        url = re.sub(r"<(?:\w+:)?" + k + ">", str(v), url)
    return url.replace("^", "").replace("$", "")


def _hostile_paths(route, good: dict) -> list[dict]:
    out = []
    for k in route.kwargs:
        conv = re.search(r"<(\w+):" + k + ">", route.pattern)
        kind = conv.group(1) if conv else "str"
        for bad in PATH_INTS if kind == "int" else PATH_STRS:
            out.append({**good, k: bad})
    return out


def _schema_fields(client) -> dict[str, set[str]]:
    """Request body and query fields per API path (OpenAPI), e.g. '/api/studies/{id}/'."""
    response = client.get("/api/schema/", {"format": "json"})
    schema = response.json()
    fields: dict[str, set[str]] = {}
    for path, ops in schema.get("paths", {}).items():
        names: set[str] = set()
        for op in ops.values():
            for p in op.get("parameters", []):
                names.add(p["name"])
            for media in op.get("requestBody", {}).get("content", {}).values():
                names |= set(media.get("schema", {}).get("properties", {}) or {})
                ref = media.get("schema", {}).get("$ref", "")
                comp = schema.get("components", {}).get("schemas", {}).get(ref.split("/")[-1], {})
                names |= set(comp.get("properties", {}))
        key = re.sub(r"\{\w+\}", "{}", path)
        fields[key] = names
    return fields


def test_fuzz_every_route(organizer, other_organizer, settings):
    settings.ANNOTATION_CROWD_ARRIVALS_PER_HOUR = 0
    settings.LOGIN_FAILURES_PER_HOUR = 0  # every hostile sign-in reaches the password check
    settings.ANNOTATION_PUBLIC_SIGNUPS_PER_HOUR = 10**6
    clients, alice, values = _setup(organizer, other_organizer)
    fz = Fuzzer(clients, alice)
    words = QUICK if os.environ.get("FUZZ_QUICK") else HOSTILE
    api_fields = _schema_fields(clients["alice"])
    for route in _pattern_routes():
        good = _fill(route, alice, values)
        url = _url(route.pattern, good)
        api_key = re.sub(r"<[^>]+>", "{}", "/" + route.pattern)
        names = set(api_fields.get(api_key, set()))
        for who in ("alice", "annotator", "crowd"):
            names |= fz.fields(who, url)
        names = names or {"id", "page", "limit"}
        print(f"{route.name}: {url} fields={sorted(names)[:30]}", flush=True)
        for who in clients:
            fz.send(who, "get", url)
            fz.send(who, "post", url)
            fz.send(who, "get", url, headers=HTMX)
            fz.send(who, "post", url, headers=HTMX)
        for bad in _hostile_paths(route, good):
            for who in ("anon", "alice", "crowd"):
                fz.send(who, "get", _url(route.pattern, bad))
                fz.send(who, "post", _url(route.pattern, bad), data={"x": "1"})
        for who in ("alice", "bob", "annotator", "crowd", "anon"):
            _fuzz_fields(fz, who, url, names, words)
    print(f"\n{fz.count} requests, {len(fz.failures)} 5xx", flush=True)
    for f in fz.failures:
        print("----\n" + f)
    assert not fz.failures


def _fuzz_fields(fz, who, url, names, words):
    for word in words:
        query = dict.fromkeys(names, word)
        if word != "\udcff":  # the client cannot encode it; raw invalid bytes are sent below
            fz.send(who, "get", url, data=query)
            fz.send(who, "post", url, data=query)
            fz.send(who, "post", url, data={n: [word, "1"] for n in names})
            fz.send(who, "get", url, data=query, headers=HTMX)
            fz.send(who, "post", url, data=query, headers=HTMX)
        body = "{" + ",".join(f'"{n}": {_json(word)}' for n in names) + "}"
        fz.send(who, "post", url, data=body, content_type="application/json")
        fz.send(who, "patch", url, data=body, content_type="application/json")
        fz.send(who, "put", url, data=body, content_type="application/json")
    for shape in ("[1, 2]", '{"a": 1}', "[[1]]", "{}"):
        body = "{" + ",".join(f'"{n}": {shape}' for n in names) + "}"
        fz.send(who, "post", url, data=body, content_type="application/json")
        fz.send(who, "patch", url, data=body, content_type="application/json")
    for body in JSON_BODIES:
        fz.send(who, "post", url, data=body, content_type="application/json")
        fz.send(who, "post", url, data=body, content_type="text/plain")
    fz.send(who, "post", url, data=b"\xff\xfe\x00garbage", content_type="application/json")
    fz.send(who, "post", url, data=b"a=%FF%FE&b=%00&c=%ED%A0%80",
            content_type="application/x-www-form-urlencoded")  # fmt: skip
    fz.send(who, "post", url, data=b"", content_type="multipart/form-data; boundary=zz")
    fz.send(
        who, "post", url, data=b"--zz\r\nbroken", content_type="multipart/form-data; boundary=zz"
    )
    many = "".join(
        f'--zz\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nv\r\n' for i in range(1200)
    )
    fz.send(who, "post", url, data=(many + "--zz--\r\n").encode(),
            content_type="multipart/form-data; boundary=zz")  # fmt: skip
    fz.send(who, "get", url + "?" + "&".join(f"{n}=1&{n}=2" for n in names))
    fz.send(who, "get", url + "?" + "&".join(f"{n}=%FF%00" for n in names))


def _json(word: str) -> str:
    import json

    if word == "\udcff":
        return '"\\udcff"'
    if word in ("1e309", "NaN", "Infinity", "-0") or word.lstrip("-").isdigit():
        return word
    try:
        return json.dumps(word)
    except Exception:  # noqa: BLE001
        return '"x"'
