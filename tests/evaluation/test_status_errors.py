"""The direct aiohttp path builds the SDK's error types with their public constructors: the same
class, message, body and status as the SDK's own clients give for the same response."""

from __future__ import annotations

import json

import httpx2
import openai
import pytest

from evaluation import client as http

CASES = [
    (400, {"error": {"message": "response_format is not supported", "type": "invalid"}}),
    (401, {"error": {"message": "bad key"}}),
    (403, {"error": {"message": "no"}}),
    (404, {"error": {"message": "model not found"}}),
    (409, {"error": {"message": "conflict"}}),
    (422, {"detail": "unprocessable"}),
    (429, {"error": {"message": "slow down"}}),
    (418, {"error": {"message": "teapot"}}),
    (500, "upstream exploded"),
    (503, {"error": {"message": ""}}),
]


def _response(status: int, body) -> httpx2.Response:
    content = body if isinstance(body, str) else json.dumps(body)
    return httpx2.Response(
        status,
        headers={"x-request-id": "req-1", "retry-after": "2"},
        content=content.encode(),
        request=httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions"),
    )


@pytest.mark.parametrize(("status", "body"), CASES)
def test_status_errors_are_the_sdk_types_with_its_message_and_body(status, body):
    e = http.status_error(_response(status, body))
    expected = {
        400: openai.BadRequestError,
        401: openai.AuthenticationError,
        403: openai.PermissionDeniedError,
        404: openai.NotFoundError,
        409: openai.ConflictError,
        422: openai.UnprocessableEntityError,
        429: openai.RateLimitError,
        418: openai.APIStatusError,
        500: openai.InternalServerError,
        503: openai.InternalServerError,
    }[status]
    assert type(e) is expected and e.status_code == status and e.request_id == "req-1"
    assert e.response.headers["retry-after"] == "2"  # the executor reads Retry-After here
    inner = body.get("error", body) if isinstance(body, dict) else body
    assert e.body == inner
    message = inner.get("message") if isinstance(inner, dict) else None
    assert e.message == f"Error code: {status}" + (f" - {message}" if message else "")


@pytest.mark.parametrize(("status", "body"), CASES)
def test_status_errors_match_what_the_sdk_itself_builds(status, body):
    """Against the SDK's own (private) construction while it exists: a change there shows."""
    sdk = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test")
    own = getattr(sdk, "_make_status_error_from_response", None)
    if own is None:
        pytest.skip("this SDK version has no _make_status_error_from_response to compare with")
    theirs, ours = own(_response(status, body)), http.status_error(_response(status, body))
    assert (type(ours), ours.message, ours.body, ours.status_code) == (
        type(theirs),
        theirs.message,
        theirs.body,
        theirs.status_code,
    )
