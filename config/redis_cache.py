"""Django's Redis cache, keeping its Redis client.

Django's RedisCacheClient builds a new `redis.Redis` around the (kept) connection pool on every
cache call, and redis-py's constructor fills a table of about 170 response callbacks each time:
on the annotator hot path (the session read and the progress figure) that was about 1 ms of CPU
per request, more than the Redis round trips themselves. The client is thread-safe (it takes a
connection from the pool per command), so one per pool does.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class KeptClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        # Django's private helpers (not in its type stubs): the pool it keeps per server, and
        # the redis.Redis class it would build around it.
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(id(pool))
        if client is None:
            client = self._client(connection_pool=pool)  # type: ignore[attr-defined]
            self._clients[id(pool)] = client
        return client


class KeptRedisCache(RedisCache):
    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = KeptClient


def hit(key: str, timeout: int | None) -> int:
    """Count one more event under `key` (a counter that lives `timeout` seconds from its first
    event; None: until it is deleted or reset) and return the count. On Redis: SET NX EX and INCR in one pipeline, one round trip,
    where Django's add() then incr() take three (incr checks that the key exists first). Other
    caches (the tests' memory cache): add() then incr()."""
    from django.core.cache import caches

    cache = caches["default"]
    if isinstance(cache, KeptRedisCache):
        backend = cache._cache
        full = cache.make_and_validate_key(key)
        pipe = backend.get_client(full, write=True).pipeline(transaction=False)
        pipe.set(full, 0, nx=True, ex=timeout)
        pipe.incr(full)
        return int(pipe.execute()[1])
    cache.add(key, 0, timeout)
    try:
        return cache.incr(key)
    except ValueError:  # gone between the two calls (evicted, expired): this is its first
        cache.add(key, 1, timeout)
        return 1
