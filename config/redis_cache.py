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
