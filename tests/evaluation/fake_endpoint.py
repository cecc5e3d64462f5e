"""A small OpenAI-compatible chat endpoint for the concurrency tests: fixed latency per request,
an optional sliding-window rate limit answered with 429 + ``Retry-After``, and answers that
depend only on the request body (so an episode replays identically however runs interleave)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWERS: tuple[dict[str, Any], ...] = (
    {"tool": "query_or_status", "arguments": {"hospital_id": "H1"}},
    {"tool": "maintain_plan", "arguments": {}},
    {"text": '{"action_type": "page_specialist", "hospital_id": "H1", "specialty": "cardiology"}'},
    {"tool": "query_or_status", "arguments": {"hospital_id": "H2"}},
    {"text": "I am not sure what to do."},
)


def _message(answer: dict[str, Any]) -> tuple[dict[str, Any], str]:
    if "text" in answer:
        return {"role": "assistant", "content": answer["text"]}, "stop"
    call = {"id": "call_0", "type": "function",
            "function": {"name": answer["tool"], "arguments": json.dumps(answer["arguments"])}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"


class FakeEndpoint:
    """``latency_s`` per answered request; more than ``limit`` requests in ``window_s`` get 429
    with a ``Retry-After`` of the time until a slot frees (at least ``retry_after_s``)."""

    def __init__(self, latency_s: float = 0.0, limit: int | None = None, window_s: float = 1.0,
                 retry_after_s: float = 0.2) -> None:
        self.latency_s, self.limit, self.window_s = latency_s, limit, window_s
        self.retry_after_s = retry_after_s
        self._lock = threading.Lock()
        self._arrivals: list[float] = []
        self.answered = 0
        self.rejected = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.authorizations: set[str] = set()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _admit(self) -> float | None:
        """``None`` when admitted, else the seconds until a slot frees (for ``Retry-After``)."""
        with self._lock:
            now = time.monotonic()
            self._arrivals = [t for t in self._arrivals if now - t < self.window_s]
            if self.limit is not None and len(self._arrivals) >= self.limit:
                self.rejected += 1
                return max(self.retry_after_s, self._arrivals[0] + self.window_s - now)
            self._arrivals.append(now)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            return None

    def _answer(self, body: bytes) -> dict[str, Any]:
        request = json.loads(body)
        digest = hashlib.sha256(json.dumps(request["messages"], sort_keys=True).encode()).digest()
        message, finish = _message(ANSWERS[digest[0] % len(ANSWERS)])
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                "model": request.get("model", "fake"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": 9,
                          "total_tokens": len(body) // 4 + 9}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with endpoint._lock:
                    endpoint.authorizations.add(self.headers.get("Authorization", ""))
                wait = endpoint._admit()
                if wait is not None:
                    self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                               {"Retry-After": f"{wait:.3f}"})
                    return
                try:
                    time.sleep(endpoint.latency_s)
                    answer = endpoint._answer(body)
                finally:
                    with endpoint._lock:
                        endpoint.in_flight -= 1
                        endpoint.answered += 1
                self._send(200, answer, {})

        return Handler
