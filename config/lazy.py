"""Modules loaded on first use rather than at start-up.

Every Django process (a ``manage.py`` command, a server, a worker) loads the URLconf for its
system checks, and with it every view. The report and quality views reach pandas, SciPy, numba
and matplotlib (about 3 CPU s to import), which most processes never call. A view module names
such a module with ``lazy_module`` and uses it as before (``pd.DataFrame(...)``): the module is
executed on its first attribute access, by the standard library's ``importlib.util.LazyLoader``.
The object is the real module, registered in ``sys.modules``, so a test that patches it patches
what the view calls. Threads that read it at once run it once (the loader holds a lock since
Python 3.12.3). Type checkers see the ordinary import under ``if TYPE_CHECKING:``.

The parent package of a dotted name is imported at once (its ``__path__`` is needed to find the
module), so this is for top-level packages and modules of light packages.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed when one of its attributes is first read."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        # What a normal import does, so `import a.b` then `a.b.x` works.
        setattr(sys.modules[parent], child, module)
    return module
