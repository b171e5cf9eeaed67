"""Shared fixtures: a small cast of users (organizer, other organizer, annotator, outsider) and
factories for datasets, studies and raters."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from annotation.models import LLM, Dataset, Question, Rater, Response, Rubric
from annotation.permissions import ORGANIZERS_GROUP


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The default hasher costs ~0.3 s per user and the fixtures create many users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Report snapshots, rate caps and leases live in the cache, and ids are reused across
    tests: every test starts and ends with it empty."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def _default_language():
    """A page request in another language (LocaleMiddleware) leaves that language active in the
    thread: every test starts in the default one, whatever ran before it in the worker."""
    from django.conf import settings
    from django.utils import translation

    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.activate(settings.LANGUAGE_CODE)


def _organizer(username: str) -> User:
    user = User.objects.create_user(username, password=f"{username}-pass-123")
    user.groups.add(Group.objects.get_or_create(name=ORGANIZERS_GROUP)[0])
    return user


@pytest.fixture
def organizer(db) -> User:
    return _organizer("alice")


@pytest.fixture
def other_organizer(db) -> User:
    """An organizer who should have no access to Alice's studies."""
    return _organizer("bob")


@pytest.fixture
def annotator_user(db) -> User:
    user = User.objects.create_user("carol", password="carol-pass-123")
    Rater.objects.create(kind=Rater.Kind.HUMAN, pool=Rater.Pool.ONSITE, user=user)
    return user


@pytest.fixture
def outsider(db) -> User:
    return User.objects.create_user("mallory", password="mallory-pass-123")


@pytest.fixture
def organizer_client(client, organizer):
    client.force_login(organizer)
    return client


@pytest.fixture
def annotator_client(client, annotator_user):
    client.force_login(annotator_user)
    return client


@pytest.fixture
def small_dataset(db):
    """Two questions (one objective, one subjective) answered by three LLMs."""
    dataset = Dataset.objects.create(name="tiny")
    llms = [LLM.objects.get_or_create(name=n)[0] for n in ("model-x", "model-y", "model-z")]
    for i, kind in enumerate(("objective", "subjective"), start=1):
        q = Question.objects.create(
            dataset=dataset,
            external_id=f"Q{i}",
            text=f"Question {i}?",
            task_type="Math" if i == 1 else "Law",
            kind=kind,
            reference=f"Reference {i}",
        )
        for j, llm in enumerate(llms):
            Response.objects.create(question=q, llm=llm, text="answer " * (j + 1) * 10)
    return dataset


@pytest.fixture
def star_rubric(db) -> Rubric:
    return Rubric.objects.get(key="llmeval2")


@pytest.fixture
def pairwise_rubric(db) -> Rubric:
    return Rubric.objects.get(key="pairwise")


# The database-free tests (pure statistics, parsers, tools) give the same result on any database:
# bin/test's second run, on PostgreSQL, sets TESTS_DATABASE_ONLY=1 and runs only the tests that
# reach the database: the django_db mark, a fixture that needs it, or a module that starts
# processes or reads the database settings itself (servers, workers, COPY); not the browser tests
# (mark e2e) nor those marked database_independent.
_DB_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "live_server"}
_DB_WORDS = ("DATABASE", "subprocess", "Popen", "psycopg", "connection", "gunicorn", "bin/")
_module_reaches_db: dict[str, bool] = {}


def _reaches_db(item) -> bool:
    # Browser tests check the pages (the same views run on PostgreSQL through the test client),
    # and `database_independent` tests hold their data in the database but compute the same
    # figures on any (the importers and the report frames are checked on PostgreSQL elsewhere),
    # or start processes that share a SQLite file of their own whatever the test database.
    if item.get_closest_marker("e2e") or item.get_closest_marker("database_independent"):
        return False
    if item.get_closest_marker("django_db") is not None:
        return True
    if _DB_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    path = str(item.path)
    if path not in _module_reaches_db:
        text = item.path.read_text(encoding="utf-8")
        _module_reaches_db[path] = any(word in text for word in _DB_WORDS)
    return _module_reaches_db[path]


# When both passes run side by side (bin/test sets TESTS_SHARE_INDEPENDENT=1 in each), the
# database-independent tests of the report's pages run in the PostgreSQL pass instead of the
# SQLite one: they need one database, either gives the same result, and the SQLite pass (which
# also has the browser tests and the database-free ones) would otherwise finish minutes after
# the PostgreSQL pass, with one core idle. Run alone, each pass keeps them as above.
SHARED_WITH_POSTGRES = {
    f"tests/ranking/{name}.py"
    for name in (
        "test_report_charts",
        "test_report_charts_hostile",
        "test_report_pages",
        "test_readable_report",
        "test_report_words",
        "test_agreement_section",
        "test_report_headers",
        "test_statistics_page",
        "test_ppi_report",
        "test_known_answers",
        "test_agreement_vs_libraries",
    )
}


def _handed_to_postgres(item) -> bool:
    return (
        item.get_closest_marker("database_independent") is not None
        and item.nodeid.split("::", 1)[0] in SHARED_WITH_POSTGRES
    )


def pytest_collection_modifyitems(config, items):
    import os

    postgres_pass = os.environ.get("TESTS_DATABASE_ONLY") == "1"
    shared = os.environ.get("TESTS_SHARE_INDEPENDENT") == "1"
    if not postgres_pass and not shared:
        return
    keep, skip = [], []
    for item in items:
        if postgres_pass:
            wanted = _reaches_db(item) or (shared and _handed_to_postgres(item))
        else:
            wanted = not _handed_to_postgres(item)
        (keep if wanted else skip).append(item)
    if skip:
        config.hook.pytest_deselected(items=skip)
        items[:] = keep
