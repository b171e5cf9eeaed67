"""Past one machine (issue 14, item 2): two app servers on different ports over the same
PostgreSQL and Redis, a task worker in a process of its own. The web processes hold no state:
an annotator whose requests alternate between the servers keeps their session, coverage is exact
(every item rated exactly N times, never more), the sign-up limits count across servers, and a
judge run started on one server is picked up by the worker and seen finished from the other.

Runs in the PostgreSQL pass of the suite (DATABASE_URL names a reachable PostgreSQL server) when
Redis answers at 127.0.0.1:6379; in CI both are started.
"""

from __future__ import annotations

import random
import re
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx2
import psycopg
import pytest

from evaluation.testing.fake_openai import FakeOpenAI
from tests.deploy.cluster import deployment, postgres_server, redis_up
from tests.deploy.cluster_data import RATINGS_PER_ITEM

SERVER = postgres_server()
pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.skipif(SERVER is None, reason="DATABASE_URL names no reachable PostgreSQL"),
    pytest.mark.skipif(not redis_up(), reason="Redis is not reachable at 127.0.0.1:6379"),
]
ASSIGNMENT = re.compile(r"/a/([0-9a-f-]{36})/")
ANNOTATORS = 8
OPEN_PER_ADDRESS = 4  # settings.ANNOTATION_OPEN_PER_ADDRESS, the default
SIGNUPS_PER_HOUR = 20  # annotation.views_annotator.PUBLIC_SIGNUPS_PER_HOUR


def an_address() -> str:
    """A client address of its own for each use (Redis is shared with other test runs)."""
    return f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"


class Client:
    """A browser without JavaScript behind the proxy, whose requests take turns between the
    app servers (one cookie jar: the session must be readable by both)."""

    def __init__(self, bases: list[str], address: str, first: int = 0):
        self.bases, self.turn = bases, first
        self.http = httpx2.Client(headers={"X-Forwarded-For": address}, timeout=30)

    def _url(self, path: str) -> str:
        self.turn += 1
        return self.bases[self.turn % len(self.bases)] + path

    def get(self, path: str, **params) -> httpx2.Response:
        return self.http.get(self._url(path), params=params)

    def post(self, path: str, data: dict) -> httpx2.Response:
        token = self.http.cookies.get("csrftoken", "")
        return self.http.post(self._url(path), data=data, headers={"X-CSRFToken": token})


def enter_crowd_study(client: Client, pid: str, worker: str) -> httpx2.Response:
    """Prolific's entry URL, then the consent box; the answer to the consent is a redirect to
    the first item, the end page, or a refusal."""
    ids = {"PROLIFIC_PID": worker, "STUDY_ID": "deploy", "SESSION_ID": uuid.uuid4().hex}
    r = client.get(f"/s/{pid}/crowd/", **ids)
    assert r.status_code == 200, r.text[:500]
    return client.post(f"/s/{pid}/crowd/", {"consent": "yes"})


def rate_until_done(client: Client, pid: str, worker: str) -> list[str]:
    """Rate every item the study hands out until the end page; the assignments rated."""
    r = enter_crowd_study(client, pid, worker)
    rated: list[str] = []
    while (m := ASSIGNMENT.search(r.headers.get("location", ""))) is not None:
        assert client.get(f"/a/{m.group(1)}/").status_code == 200
        choice = random.choice(["left", "right", "tie", "both_bad"])
        r = client.post(f"/a/{m.group(1)}/", {"choice": choice, "active_ms": "9000"})
        assert r.status_code == 302, r.text[:500]
        rated.append(m.group(1))
    assert r.status_code == 302 and "/done/" in r.headers["location"], r.text[:500]
    return rated


@pytest.fixture(scope="module")
def fake():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def cluster(fake, tmp_path_factory):
    with deployment(SERVER, fake.base_url, tmp_path_factory.mktemp("deploy")) as running:
        yield running


def _rows(env: dict, query: str, args: list) -> list[tuple]:
    with psycopg.connect(env["DATABASE_URL"]) as conn:
        return conn.execute(query, args).fetchall()


def test_annotators_spread_over_both_servers_rate_every_item_exactly_n_times(cluster):
    ids, bases, env = cluster
    study = ids["coverage"]
    workers = [f"deploy-{i}-{uuid.uuid4().hex[:6]}" for i in range(ANNOTATORS)]
    clients = [Client(bases, an_address(), first=i) for i in range(ANNOTATORS)]
    with ThreadPoolExecutor(ANNOTATORS) as pool:
        rated = list(pool.map(lambda c, w: rate_until_done(c, study["pid"], w), clients, workers))
    # First exposures only: a few items come back to a rater on purpose (is_repeat, the study's
    # repeat_rate, for self-consistency) and hold no room.
    items = _rows(
        env,
        "SELECT i.id, i.n_ratings, i.n_reserved, count(a.id), count(DISTINCT a.rater_id) "
        "FROM annotation_item i LEFT JOIN annotation_assignment a ON a.item_id = i.id "
        "AND a.status = 'submitted' AND NOT a.is_repeat WHERE i.study_id = %s GROUP BY i.id",
        [study["id"]],
    )
    n = RATINGS_PER_ITEM
    assert len(items) == study["items"]
    wrong = [row for row in items if row[1:] != (n, 0, n, n)]
    assert wrong == []  # (item, ratings, held, submitted, raters): exact, none over, none held
    stored = _rows(
        env,
        "SELECT count(*) FROM annotation_assignment WHERE study_id = %s AND status = 'submitted'",
        [study["id"]],
    )
    assert sum(len(r) for r in rated) == stored[0][0]  # every acknowledged rating kept
    assert all(rated), "every annotator got work from both servers"


def test_the_open_item_cap_per_address_holds_across_servers(cluster):
    ids, bases, _env = cluster
    address, pid = an_address(), ids["capped"]["pid"]
    answers = []
    for i in range(OPEN_PER_ADDRESS + 2):
        r = enter_crowd_study(Client(bases, address, first=i), pid, f"cap-{i}-{uuid.uuid4().hex}")
        answers.append("item" if ASSIGNMENT.search(r.headers.get("location", "")) else r.text)
    assert answers[:OPEN_PER_ADDRESS] == ["item"] * OPEN_PER_ADDRESS
    assert all("Too many open items from your network" in a for a in answers[OPEN_PER_ADDRESS:])


def _sign_up(bases: list[str], address: str, i: int, pid: str) -> int:
    client = Client(bases, address, first=i)
    assert client.get(f"/s/{pid}/join/").status_code == 200
    form = {"nickname": f"visitor {i}", "consent": "on", "website": ""}
    return client.post(f"/s/{pid}/join/", form).status_code


def test_public_sign_ups_per_address_are_counted_across_servers(cluster):
    ids, bases, _env = cluster
    for _attempt in range(2):  # the count is per clock hour: once more if the hour turned
        hour, address = int(time.time() // 3600), an_address()
        codes = [_sign_up(bases, address, i, ids["public"]["pid"]) for i in range(24)]
        if int(time.time() // 3600) == hour:
            break
    # Each server alone would have let 20 through (40 in all) with a per-process cache.
    assert codes == [302] * SIGNUPS_PER_HOUR + [429] * (24 - SIGNUPS_PER_HOUR)
    # Another address is not affected.
    assert _sign_up(bases, an_address(), 99, ids["public"]["pid"]) == 302


def test_a_judge_run_started_on_one_server_is_finished_by_the_worker(cluster, fake):
    ids, bases, _env = cluster
    auth = {"Authorization": f"Token {ids['token']}"}
    body = {"study": ids["judged"], "judge": ids["judge"], "repeat_rate": 0}
    r = httpx2.post(f"{bases[0]}/api/judges/runs/start/", json=body, headers=auth, timeout=30)
    assert r.status_code == 201, r.text
    run = r.json()
    assert run["status"] == "queued"
    deadline = time.monotonic() + 120
    while run["status"] != "done":
        assert time.monotonic() < deadline, f"the worker did not finish the run: {run}"
        assert run["status"] in ("queued", "running"), run
        time.sleep(0.3)
        run = httpx2.get(f"{bases[1]}/api/judges/runs/{run['id']}/", headers=auth).json()
    assert run["ok"] == ids["judged_items"] and len(fake.paid()) == ids["judged_items"]


def test_a_judge_run_cannot_be_started_without_the_operators_token(cluster):
    ids, bases, _env = cluster
    body = {"study": ids["judged"], "judge": ids["judge"]}
    r = httpx2.post(f"{bases[1]}/api/judges/runs/start/", json=body, timeout=30)
    assert r.status_code in (401, 403)
