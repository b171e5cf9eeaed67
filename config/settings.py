"""One env-driven settings file.

SQLite by default so a fresh clone can run the demo with no services; set DATABASE_URL
(postgres://user@host:port/name) for PostgreSQL, the production database.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


class SettingError(ValueError):
    """An environment variable holds a value the settings cannot read: refuse to start."""


def envbool(name: str, default: bool) -> bool:
    # A typo such as DEBUG=flase must stop the server, not silently read as False.
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise SettingError(
        f"{name}={value!r} is not a yes/no value; use one of 1/0, true/false, yes/no, on/off"
    )


def envint(name: str, default: int, *, minimum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    text = value.strip()
    # int() accepts Unicode digits ('٣') and underscores ('1_0'); a setting takes plain ASCII only.
    if not (text.isascii() and text.lstrip("-").isdigit() and len(text) <= 18):
        raise SettingError(f"{name}={value!r} is not a whole number")
    number = int(text)
    if minimum is not None and number < minimum:
        raise SettingError(f"{name}={number} is below the minimum of {minimum}")
    return number


def envlist(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


def envpairs(name: str, default: str) -> list[tuple[str, str]]:
    """A comma-separated list of NAME=value pairs; each is checked at start-up."""
    pairs = []
    for entry in envlist(name, default):
        key, sep, value = entry.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise SettingError(f"{name}: {entry!r} is not NAME=value")
        pairs.append((key.strip(), value.strip()))
    return pairs


def envnetworks(name: str) -> list[str]:
    """A comma-separated list of IP addresses or networks (CIDR); each is checked at start-up."""
    entries = envlist(name, "")
    for entry in entries:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise SettingError(f"{name}: {entry!r} is not an IP address or network") from None
    return entries


DEBUG = envbool("DEBUG", True)
# The default key is only for the local demo; settings refuse to start without a real one when
# DEBUG is off.
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "demo-only-insecure-key-change-me"
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000")
# Reverse proxies (addresses or CIDR networks) whose X-Forwarded-For header is believed. Empty (the
# default): per-address rules key on REMOTE_ADDR and ignore the header, which any client can forge.
# Behind nginx on the same host: TRUSTED_PROXIES=127.0.0.1,::1. See annotation/net.py.
TRUSTED_PROXIES = envnetworks("TRUSTED_PROXIES")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "django_tasks_db",
    "annotation",
    "evaluation",
    "ranking",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.conflicts.ConflictMiddleware",  # a unique value written twice at once: 409
]
if not DEBUG:
    # Static files from the app server itself, hashed and compressed: collectstatic's output,
    # served right after SecurityMiddleware. With DEBUG on, runserver and the tests serve static/.
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=envint("DB_CONN_MAX_AGE", 0, minimum=0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several writers at once (the demo server's threads, a judge run, a task worker):
    # - transaction_mode IMMEDIATE: a transaction takes the write lock when it begins, so a
    #   second writer waits for it (the busy timeout). With SQLite's default (DEFERRED) a
    #   transaction that read first and then writes cannot wait: SQLite refuses the upgrade at
    #   once with "database is locked" (a 500), whatever the timeout.
    # - timeout: how long a writer waits for the lock, in seconds.
    # - WAL: readers never wait for the writer nor the writer for readers; synchronous=NORMAL
    #   is safe in WAL mode (a power cut can lose the last commits, never corrupt the file).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": envint("SQLITE_TIMEOUT", 20, minimum=1),
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
# Behind PgBouncer in transaction mode a server connection passes to another client after each
# transaction, so neither server-side cursors (QuerySet.iterator() outside a transaction) nor
# named prepared statements survive. DB_TRANSACTION_POOLING=true turns both off (docs/deploy.md).
DB_TRANSACTION_POOLING = envbool("DB_TRANSACTION_POOLING", False)
# Server-side binding + prepared statements: psycopg prepares a query after a few uses on a
# connection, so PostgreSQL stops re-planning the annotator page's 8-table join on every request
# (4 ms planning for a 0.4 ms query). See docs/decisions/annotation.md. Set
# DB_PREPARE_THRESHOLD=0 behind a transaction-mode pooler that cannot carry prepared statements.
DB_PREPARE_THRESHOLD = envint("DB_PREPARE_THRESHOLD", 0 if DB_TRANSACTION_POOLING else 5, minimum=0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = DB_TRANSACTION_POOLING
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_PREPARE_THRESHOLD > 0:
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"server_side_binding": True, "prepare_threshold": DB_PREPARE_THRESHOLD}
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]
# Production (DEBUG off) serves collectstatic's output through WhiteNoise under hashed, compressed
# names that browsers may cache for ever; with DEBUG on (the demo, the tests) files are served as
# they are from static/, with no collectstatic step.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

# Crowd and public annotators: open items one client address may hold per study (a stranger
# cannot lock a study with made-up worker ids; see annotation/leases.py). 0 turns the cap off,
# e.g. for a load test whose clients all come from one address.
ANNOTATION_OPEN_PER_ADDRESS = envint("ANNOTATION_OPEN_PER_ADDRESS", 4)
# Largest upload (all files of one import, in MB) the import page, API and admin take: the
# importers parse a file whole in memory. 0 = no cap. The command line has none.
IMPORT_UPLOAD_MAX_MB = envint("IMPORT_UPLOAD_MAX_MB", 256, minimum=0)
# Longest any annotator may hold one item, in seconds from when it was served (renewals after it
# are refused, so a script that keeps renewing cannot block a study; see annotation/leases.py).
# Generous: a real annotator never gets near it. 0 turns the cap off.
ANNOTATION_MAX_HOLD = envint("ANNOTATION_MAX_HOLD", 3600, minimum=0)
# New crowd worker ids (raters) one client address may bring per hour: a stranger replaying an
# entry link with made-up ids cannot fill the database with raters. The same number caps, on its
# own count, new sessions of known ids (the link replayed without cookies). 0 turns the cap off.
ANNOTATION_CROWD_ARRIVALS_PER_HOUR = envint("ANNOTATION_CROWD_ARRIVALS_PER_HOUR", 200)
# Failed sign-ins (login page and admin) one client address may make per hour before the form
# refuses without checking the password (config/login.py). 0 turns the cap off.
LOGIN_FAILURES_PER_HOUR = envint("LOGIN_FAILURES_PER_HOUR", 30, minimum=0)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "config.drf.SafeTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["annotation.permissions.IsOrganizer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Bad input is a 400 with a message, never a 500 (config/drf.py).
    "DEFAULT_PARSER_CLASSES": [
        "config.drf.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "config.drf.exception_handler",
    # The browsable API draws no HTML forms: their drop-downs listed every organizer's rows.
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "config.drf.RawFormsBrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "config.drf.Pages",
    "PAGE_SIZE": 100,
    "DEFAULT_THROTTLE_RATES": {"public_signup": "30/hour", "anon": "600/minute"},
    # DRF's own throttles would otherwise key on the whole X-Forwarded-For header, which any
    # client can write. 0: REMOTE_ADDR. Throttles of ours use config.drf.ClientIpThrottleMixin,
    # which follows TRUSTED_PROXIES like every per-address rule.
    "NUM_PROXIES": 0,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "LLM evaluation platform API",
    "DESCRIPTION": "Studies, data, human and LLM-judge ratings, statistics. Organizer-only.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI assets are served from the installed sidecar package, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two apps reuse the same choice sets under the field name "kind"; name the enums explicitly.
    "ENUM_NAME_OVERRIDES": {
        "RubricModeEnum": "annotation.models.Rubric.Mode",
        "QuestionKindEnum": "annotation.models.Question.Kind",
    },
}

# Jobs (judge runs) go through Django's task framework, django.tasks: `@task` functions and
# `.enqueue()`. TASK_BACKEND picks the backend (docs/deploy.md, docs/decisions/tasks.md):
# - "database" (default; "embedded" is its old name): the queue is a table in this database
#   (django-tasks-db), no extra service; `manage.py db_worker` processes run the jobs (bin/demo
#   starts one). Works on SQLite for the demo and on PostgreSQL (SKIP LOCKED) for production.
# - "celery": jobs go through the Redis broker (CELERY_BROKER_URL) to Celery workers on any
#   machine (config/celery_backend.py, config/celery.py).
# - "immediate": the job runs in the caller (tests and scripts).
TASK_BACKEND_CLASSES = {
    "database": "django_tasks_db.DatabaseBackend",
    "embedded": "django_tasks_db.DatabaseBackend",
    "celery": "config.celery_backend.CeleryBackend",
    "immediate": "django.tasks.backends.immediate.ImmediateBackend",
}


def tasks_setting(engine: str) -> dict:
    """The TASKS setting for a TASK_BACKEND value; an unknown value stops the server."""
    backend = TASK_BACKEND_CLASSES.get(engine.strip().lower())
    if backend is None:
        names = ", ".join(TASK_BACKEND_CLASSES)
        raise SettingError(f"TASK_BACKEND={engine!r} is not one of {names}")
    return {"default": {"BACKEND": backend}}


TASK_BACKEND = os.environ.get("TASK_BACKEND") or "database"
TASKS = tasks_setting(TASK_BACKEND)
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", CELERY_BROKER_URL)

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
if os.environ.get("REDIS_URL"):
    CACHES = {
        "default": {
            # Django's RedisCache, keeping its client between calls (config/redis_cache.py).
            "BACKEND": "config.redis_cache.KeptRedisCache",
            "LOCATION": os.environ["REDIS_URL"],
        }
    }
    # Sessions read from the shared cache (one Redis GET instead of a database query on every
    # annotator request) and are written through to the database. Only with a shared cache: a
    # per-process memory cache would hand other processes stale sessions.
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# The server's start-up (config/wsgi.py, before gunicorn --preload forks) also loads the
# statistics stack (pandas, SciPy, numba, matplotlib: about 2.5 CPU s), so no worker's first
# report pays for it. Off for app servers that only serve annotators (docs/deploy.md).
WARM_REPORT_STACK = envbool("WARM_REPORT_STACK", True)
LOG_LEVEL = os.environ.get("LOG_LEVEL", "WARNING")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # At most 20 lines a minute of each kind of warning (a 4xx flood; config/log_limits.py).
    "filters": {"flood_cap": {"()": "config.log_limits.PerMinuteCap", "per_minute": 20}},
    "handlers": {
        # The handler has the level too: records that propagate from Django's own loggers (a
        # warning per 4xx on django.request) skip the root logger's level, not its handlers'.
        "console": {"class": "logging.StreamHandler", "level": LOG_LEVEL, "filters": ["flood_cap"]}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}

if not DEBUG:
    SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", True)

# LLM judges (docs/judges.md, "Security"). The runner sends the value of a judge's key variable
# as a Bearer token to the judge's URL, so only the variables the operator lists here may be
# named (never HOME, SECRET_KEY or DATABASE_URL); LLMEVAL_DEMO_JUDGE_KEY is the demo's fake key.
JUDGE_API_KEY_ENVS = envlist("JUDGE_API_KEY_ENVS", "OPENAI_API_KEY,LLMEVAL_DEMO_JUDGE_KEY")
# Judges may call public hosts; private, loopback, link-local (cloud metadata), multicast and
# reserved addresses only when listed here (host names, .suffixes, IP addresses or CIDR networks).
JUDGE_ALLOWED_HOSTS = envlist("JUDGE_ALLOWED_HOSTS", "")
JUDGE_ALLOW_PUBLIC_HOSTS = envbool("JUDGE_ALLOW_PUBLIC_HOSTS", True)
# Where a key variable's value may be sent: VARIABLE=host pairs (a variable may have several).
# A variable named here goes only to its hosts, so no organizer can point a judge at their own
# server and receive the operator's OpenAI key; a variable not named goes to any allowed host.
JUDGE_KEY_HOSTS = envpairs("JUDGE_KEY_HOSTS", "OPENAI_API_KEY=api.openai.com")
