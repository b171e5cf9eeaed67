"""OpenAI's Batch API on the local test server (FakeOpenAI): POST /v1/files (purpose "batch"),
POST /v1/batches, GET /v1/batches/{id}, GET /v1/batches (list), POST /v1/batches/{id}/cancel and
GET /v1/files/{id}/content.

A batch completes `batch_latency` seconds after it was created, on the first GET after that. Each
line is answered as /v1/chat/completions would answer it (same answers, same markers), logged as
a paid call. `<<fake:batchfail>>` in a line's prompt puts that line in the error file; while `expire` is
above 0, each batch counts it down and expires with only its first half answered (like OpenAI's
24 h window running out). `batch_supported=False` answers 404, like servers without the Batch API.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from typing import Any

from evaluation.testing.fake_answers import MARKER, _prompt_text, completion


class FakeBatches:
    def __init__(self, server) -> None:
        self.server = server
        self.latency = 0.0
        self.expire = 0
        self.supported = True
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}

    def reset(self) -> None:
        self.latency, self.expire, self.supported = 0.0, 0, True
        self.files.clear()
        self.batches.clear()

    def lines_received(self) -> list[str]:
        """The custom_id of every line of every batch created, in order: what the server was
        asked (and, on OpenAI, would be paid) to answer."""
        return [
            json.loads(line)["custom_id"]
            for b in self.batches.values()
            for line in self.files[b["input_file_id"]].splitlines()
            if line.strip()
        ]

    def routes(self, router) -> None:
        router.add_post("/v1/files", self._upload)
        router.add_get("/v1/files/{file_id}/content", self._content)
        router.add_post("/v1/batches", self._create)
        router.add_get("/v1/batches", self._list)
        router.add_get("/v1/batches/{batch_id}", self._retrieve)
        router.add_post("/v1/batches/{batch_id}/cancel", self._cancel)

    def _absent(self):
        return self.server._json(404, {"error": {"message": "Not found"}})

    async def _upload(self, request):
        if not self.supported:
            return self._absent()
        form = await request.post()
        upload = form.get("file")
        if upload is None or form.get("purpose") != "batch":
            return self.server._json(400, {"error": {"message": "file and purpose=batch needed"}})
        data = upload.file.read()
        file_id = f"file-{uuid.uuid4().hex[:12]}"
        self.files[file_id] = data
        return self.server._json(
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "purpose": "batch",
                "filename": upload.filename or "batch.jsonl",
                "created_at": int(time.time()),
            },
        )

    async def _content(self, request):
        data = self.files.get(request.match_info["file_id"])
        if data is None:
            return self._absent()
        from aiohttp import web

        return web.Response(body=data, content_type="application/octet-stream")

    async def _create(self, request):
        if not self.supported:
            return self._absent()
        req = json.loads(await request.read() or b"{}")
        if req.get("input_file_id") not in self.files:
            return self.server._json(400, {"error": {"message": "unknown input_file_id"}})
        batch_id = f"batch_{uuid.uuid4().hex[:12]}"
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": req.get("endpoint", "/v1/chat/completions"),
            "input_file_id": req["input_file_id"],
            "completion_window": req.get("completion_window", "24h"),
            "status": "in_progress",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": int(time.time()),
            "metadata": req.get("metadata") or {},
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "_t": time.monotonic(),
        }
        return self.server._json(200, self._public(self.batches[batch_id]))

    async def _list(self, request):
        if not self.supported:
            return self._absent()
        data = [self._public(b) for b in reversed(self.batches.values())]
        return self.server._json(200, {"object": "list", "data": data, "has_more": False})

    async def _retrieve(self, request):
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None or not self.supported:
            return self._absent()
        if batch["status"] == "in_progress" and time.monotonic() - batch["_t"] >= self.latency:
            self._process(batch)
        return self.server._json(200, self._public(batch))

    async def _cancel(self, request):
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return self._absent()
        if batch["status"] == "in_progress":
            batch["status"] = "cancelled"
        return self.server._json(200, self._public(batch))

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _process(self, batch: dict[str, Any]) -> None:
        lines = [json.loads(x) for x in self.files[batch["input_file_id"]].splitlines() if x]
        expired = self.expire > 0
        self.expire -= 1 if expired else 0
        answered = lines[: len(lines) // 2] if expired else lines
        out: list[str] = []
        errors: list[str] = []
        for line in answered:
            result = self._answer_line(line)
            (out if result.get("response") else errors).append(json.dumps(result))
        if out:
            batch["output_file_id"] = self._store("\n".join(out) + "\n")
        if errors:
            batch["error_file_id"] = self._store("\n".join(errors) + "\n")
        batch["request_counts"] = {
            "total": len(lines),
            "completed": len(out),
            "failed": len(errors),
        }
        batch["status"] = "expired" if expired else "completed"

    def _store(self, text: str) -> str:
        file_id = f"file-{uuid.uuid4().hex[:12]}"
        self.files[file_id] = text.encode("utf-8")
        return file_id

    def _answer_line(self, line: dict[str, Any]) -> dict[str, Any]:
        body = line.get("body") or {}
        messages = body.get("messages") or []
        prompt = _prompt_text(messages)
        markers = {m.group(1) for m in MARKER.finditer(prompt)}
        request_id = f"batch_req_{uuid.uuid4().hex[:10]}"
        if "batchfail" in markers:
            return {
                "id": request_id,
                "custom_id": line.get("custom_id"),
                "response": None,
                "error": {"code": "server_error", "message": "The line failed"},
            }
        data, tokens_in, tokens_out = completion(body, messages, markers, f"chatcmpl-{request_id}")
        canonical = json.dumps(body, sort_keys=True).encode()
        self.server.log_paid(
            request_hash=hashlib.sha256(canonical).hexdigest(),
            purpose=str(line.get("custom_id", "")).split(":")[0],
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            batch=True,
        )
        return {
            "id": request_id,
            "custom_id": line.get("custom_id"),
            "response": {"status_code": 200, "request_id": request_id, "body": data},
            "error": None,
        }
