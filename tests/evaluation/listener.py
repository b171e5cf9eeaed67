"""A plain HTTP listener the tests control, standing in for an attacker's server: it records every
request (path and headers) and answers with what the test asks for."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHAT_OK = {
    "id": "chatcmpl-listener",
    "object": "chat.completion",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
}


class Listener:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        # (status, body, extra headers) answered to every POST and to every GET (model list);
        # a body given as bytes is sent as it is.
        self.reply: tuple[int, Any, dict[str, str]] = (200, CHAT_OK, {})
        self.models_reply: tuple[int, Any, dict[str, str]] = (
            200,
            {"object": "list", "data": [{"id": "spy", "object": "model"}]},
            {},
        )
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, body: Any, headers: dict[str, str]) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                listener.requests.append(
                    {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
                )
                self._answer(*listener.models_reply)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                listener.requests.append(
                    {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
                )
                self._answer(*listener.reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def authorizations(self) -> list[str]:
        return [r["headers"].get("authorization", "") for r in self.requests]

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
