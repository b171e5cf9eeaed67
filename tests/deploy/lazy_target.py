"""A module for tests/deploy/test_startup_imports.py to load lazily (one constant, no imports)."""

VALUE = 42
