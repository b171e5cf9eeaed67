"""config.redis_cache.hit: the rate limits' counter, one Redis round trip per event."""

from __future__ import annotations

import os
import uuid

import pytest
from django.core.cache import caches

from config.redis_cache import hit


def test_hit_counts_in_the_memory_cache(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    key = f"hit-test:{uuid.uuid4().hex}"
    assert [hit(key, 60) for _ in range(3)] == [1, 2, 3]
    assert hit(f"{key}:other", 60) == 1


@pytest.fixture
def redis_cache(settings):
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.skip("REDIS_URL is not set")
    settings.CACHES = {"default": {"BACKEND": "config.redis_cache.KeptRedisCache", "LOCATION": url}}
    cache = caches["default"]
    try:
        cache.get("hit-test:ping")
    except Exception:  # noqa: BLE001 - no Redis at that address
        pytest.skip("Redis is not reachable")
    return cache


def test_hit_counts_on_redis_and_the_counter_expires(redis_cache):
    key = f"hit-test:{uuid.uuid4().hex}"
    forever = f"{key}:forever"
    try:
        assert [hit(key, 60) for _ in range(3)] == [1, 2, 3]
        client = redis_cache._cache.get_client(write=True)
        assert 0 < client.ttl(redis_cache.make_and_validate_key(key)) <= 60
        # Django's own calls see the same counter.
        assert redis_cache.get(key) == 3
        assert redis_cache.incr(key) == 4
        assert hit(forever, None) == 1
        assert client.ttl(redis_cache.make_and_validate_key(forever)) == -1
    finally:
        redis_cache.delete_many([key, forever])
