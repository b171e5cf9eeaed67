from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from config.warmup import warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# Import every view now, at start-up, rather than on the first request each process serves. With
# gunicorn --preload it happens once, before the workers fork. The report stack (pandas, SciPy,
# numba, matplotlib: about 3 CPU s) is not part of it: it loads with the first report a process
# computes (config/lazy.py); warm_up() loads what the annotators' requests need.
get_resolver().url_patterns  # noqa: B018
warm_up()
