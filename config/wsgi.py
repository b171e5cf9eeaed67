from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from config.warmup import warm_up

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# Import every view now, at start-up, rather than on the first request each process serves: the
# report views pull in pandas, SciPy, numba and matplotlib (about 3 s of CPU), which would
# otherwise land on an annotator's first page. With gunicorn --preload it happens once, before
# the workers fork.
get_resolver().url_patterns  # noqa: B018
warm_up()
