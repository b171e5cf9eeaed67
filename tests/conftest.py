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


def pytest_collection_modifyitems(config, items):
    import os

    if os.environ.get("TESTS_DATABASE_ONLY") != "1":
        return
    keep, skip = [], []
    for item in items:
        (keep if _reaches_db(item) else skip).append(item)
    if skip:
        config.hook.pytest_deselected(items=skip)
        items[:] = keep
