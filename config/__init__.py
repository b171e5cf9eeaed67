from __future__ import annotations

# Celery is optional at import time: the database task backend needs nothing extra.
try:  # pragma: no cover - exercised when celery is installed (it is pinned in requirements)
    from .celery import app as celery_app

    __all__ = ["celery_app"]
except ImportError:  # pragma: no cover
    __all__ = []
