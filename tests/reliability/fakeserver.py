"""A real OpenAI-compatible HTTP server on 127.0.0.1, for the reliability tests.

    with FakeServer(delay=0.02) as server:
        backend = OpenAIBackend(base_url=server.url, retry=RetryPolicy(backoff_s=0.0))
        ...
        server.fail("503", after=2)   # two good answers, then 503 + Retry-After
        server.heal()
        server.count                  # POSTs received so far

It listens on a real socket (a ThreadingHTTPServer in a background thread), so the
client's whole HTTP stack runs: timeouts, connection resets and truncated bodies are
real. Each request is answered by `answer(body) -> message content`, or by the
configured fault: besides error statuses and broken connections, `trickle` (one
byte per `trickle_s`), `huge` (a valid answer of `huge_bytes`) and `deep` (JSON
nested `deep` levels). `GET /v1/models` lists `models` (default `["fake-model"]`;
None answers 404), each listing recorded in `model_lists`, not in `requests`.
Every request is recorded (path, headers, body), and every answer
that was written out in full is recorded again in `answered`.

Run as a script it serves until killed and writes its port to a file:
`python tests/reliability/fakeserver.py --port-file F --delay 0.02 [--log answered.jsonl]`.
Standard library only, so the script runs without attest on the path.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

__all__ = ["FAULTS", "ROOT", "AnswerFn", "FakeServer", "Recorded", "reaction_answer", "reaction_command", "script_env"]

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
FAULTS = ("ok", "500", "503", "slow", "reset", "truncated", "not-json", "404", "401", "trickle", "huge", "deep")

Body = dict[str, Any]
AnswerFn = Callable[[Body], str]


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    body: Body
    received: float

    @property
    def messages_key(self) -> str:
        """The request's messages as canonical JSON: what identifies a sample for a fixed model."""
        return json.dumps(self.body.get("messages"), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def reaction_answer(body: Body) -> str:
    """A valid, deterministic reaction answer derived from the request (different requests, different answers)."""
    messages = body.get("messages") or [{}]
    user = str(messages[-1].get("content", ""))
    title = next((line[len("Title: ") :] for line in user.splitlines() if line.startswith("Title: ")), "the item")
    digest = hashlib.sha256(user.encode("utf-8")).digest()
    answer = {
        "verdict": digest[0] % 2 == 0,
        "confidence": 1 + digest[1] % 5,
        "reasoning": f"The item {title[:200]!r} was judged against the reader's stated interests.",
    }
    return json.dumps(answer)


def fixed_usage(body: Body) -> dict[str, int]:
    """The `usage` every answer reports unless a test sets `FakeServer.usage`."""
    return {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def completion(content: str, model: str = "fake-model", usage: dict[str, int] | None = None) -> Body:
    """An OpenAI chat.completion object carrying `content` as the message."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": usage or fixed_usage({}),
    }


class FakeServer:
    """An OpenAI-compatible server with per-request faults; a context manager that starts and stops it."""

    def __init__(self, answer: AnswerFn = reaction_answer, *, delay: float = 0.0, port: int = 0) -> None:
        self.answer = answer
        self.delay = delay
        self.slow_s = 2.0
        self.retry_after = "1"
        self.trickle_s = 0.2  # the "trickle" fault: one byte of the body per trickle_s
        self.huge_bytes = 5_000_000  # the "huge" fault: a valid answer whose content is this long
        # Built once, when the fault is set, not per request: building 5 MB of JSON takes the server thread
        # about 0.13 s, which under load outran a 0.3 s client timeout and made a real (retried) timeout.
        self.huge_built = 0  # how many times the huge answer was built
        self.huge_start_s: list[float] = []  # pauses before the next huge answers' headers (one per answer)
        self.huge_chunk_s = 0.0  # pause between the huge answer's 64 kB chunks (a slow read)
        self._huge: tuple[int, bytes] | None = None
        self.deep = 100_000  # the "deep" fault: a JSON body nested this deep
        self.models: list[str] | None = ["fake-model"]  # GET /v1/models lists these; None answers 404
        self.model_lists: list[Recorded] = []  # every GET /v1/models
        self.on_answered: Callable[[Recorded], None] | None = None
        self.usage: Callable[[Body], dict[str, int]] = fixed_usage  # the `usage` an "ok" answer reports
        self._fault = "ok"
        self._fault_after = 0
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.answered: list[Recorded] = []
        self._httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def fail(self, fault: str, *, after: int = 0) -> None:
        """From now on answer with `fault`, after `after` more good answers."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}: choose one of {', '.join(FAULTS)}")
        if fault == "huge":
            self.huge_payload()
        with self._lock:
            self._fault, self._fault_after = fault, len(self.requests) + after

    def huge_payload(self) -> bytes:
        """The huge fault's body for `huge_bytes`, built on first use and kept."""
        if self._huge is None or self._huge[0] != self.huge_bytes:
            filler = "x" * self.huge_bytes
            payload = json.dumps(completion(json.dumps({"verdict": True, "confidence": 3, "reasoning": filler})))
            self._huge = (self.huge_bytes, payload.encode("utf-8"))
            self.huge_built += 1
        return self._huge[1]

    def heal(self) -> None:
        self.fail("ok")

    def reset_records(self) -> None:
        with self._lock:
            self.requests.clear()
            self.answered.clear()
            self._fault_after = 0

    def start(self) -> FakeServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _receive(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[Recorded, str]:
        try:
            body = json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            body = {"unparsed": raw.decode("utf-8", "replace")}
        record = Recorded(path, headers, body if isinstance(body, dict) else {"unparsed": body}, time.time())
        with self._lock:
            fault = self._fault if len(self.requests) >= self._fault_after else "ok"
            self.requests.append(record)
        return record, fault

    def answered_usage(self, record: Recorded) -> dict[str, int]:
        """The `usage` the answer to `record` reported."""
        return self.usage(record.body)

    def _answered(self, record: Recorded) -> None:
        with self._lock:
            self.answered.append(record)
        if self.on_answered is not None:
            self.on_answered(record)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is expected here: stay quiet."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path.split("?")[0] != MODELS_PATH or fake.models is None:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        record = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, {}, time.time())
        with fake._lock:
            fake.model_lists.append(record)
        data = [{"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in fake.models]
        self._json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fake = self.server.fake
        record, fault = fake._receive(self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
        if fake.delay:
            time.sleep(fake.delay)
        if self.path.split("?")[0] != CHAT_PATH:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        _FAULT_HANDLERS[fault](self, record)

    def _json(self, status: int, data: Body, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode("utf-8"), "application/json", headers)

    def _send(self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _ok(self, record: Recorded) -> None:
        fake = self.server.fake
        self._json(200, completion(fake.answer(record.body), usage=fake.usage(record.body)))
        fake._answered(record)

    def _error(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        self._json(
            status,
            {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}},
            headers,
        )

    def _500(self, record: Recorded) -> None:
        self._error(500, "internal error: the model runner crashed", "server_error")

    def _503(self, record: Recorded) -> None:
        self._error(503, "the model is loading", "overloaded", {"Retry-After": self.server.fake.retry_after})

    def _slow(self, record: Recorded) -> None:
        time.sleep(self.server.fake.slow_s)
        try:
            self._ok(record)
        except OSError:
            self.close_connection = True

    def _reset(self, record: Recorded) -> None:
        """Start a good answer, then abort the connection (RST) halfway through the body."""
        payload = json.dumps(completion(self.server.fake.answer(record.body))).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload[: len(payload) // 2])
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.rfile.close()
        self.wfile.close()
        self.connection.close()

    def _truncated(self, record: Recorded) -> None:
        """Promise more bytes than are sent, then close the connection cleanly."""
        payload = json.dumps(completion(self.server.fake.answer(record.body))).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload) + 512))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        self.close_connection = True

    def _not_json(self, record: Recorded) -> None:
        self._send(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")

    def _404(self, record: Recorded) -> None:
        model = record.body.get("model", "")
        self._error(404, f"The model `{model}` does not exist or you do not have access to it.", "model_not_found")

    def _401(self, record: Recorded) -> None:
        # Echo the credential as a careless proxy would: a client must not repeat it anywhere.
        got = record.headers.get("authorization", "(none)")
        self._error(401, f"Incorrect API key provided: {got}", "invalid_api_key")

    def _trickle(self, record: Recorded) -> None:
        """A good answer, one byte every `trickle_s` seconds (each byte resets a per-read timeout)."""
        payload = json.dumps(completion(self.server.fake.answer(record.body))).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        try:
            for i in range(len(payload)):
                self.wfile.write(payload[i : i + 1])
                self.wfile.flush()
                time.sleep(self.server.fake.trickle_s)
        except OSError:
            self.close_connection = True

    def _huge(self, record: Recorded) -> None:
        """A valid completion whose content is `huge_bytes` long, sent in 64 kB chunks (built in advance)."""
        fake = self.server.fake
        data = fake.huge_payload()
        if fake.huge_start_s:
            time.sleep(fake.huge_start_s.pop(0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            for i in range(0, len(data), 1 << 16):
                self.wfile.write(data[i : i + (1 << 16)])
                if fake.huge_chunk_s:
                    self.wfile.flush()
                    time.sleep(fake.huge_chunk_s)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _deep(self, record: Recorded) -> None:
        depth = self.server.fake.deep
        self._send(200, b"[" * depth + b"]" * depth, "application/json")


_FAULT_HANDLERS: dict[str, Callable[[_Handler, Recorded], None]] = {
    "ok": _Handler._ok,
    "500": _Handler._500,
    "503": _Handler._503,
    "slow": _Handler._slow,
    "reset": _Handler._reset,
    "truncated": _Handler._truncated,
    "not-json": _Handler._not_json,
    "404": _Handler._404,
    "401": _Handler._401,
    "trickle": _Handler._trickle,
    "huge": _Handler._huge,
    "deep": _Handler._deep,
}


# --- for tests that run the eval scripts in a subprocess -------------------------------

ROOT = Path(__file__).resolve().parents[2]


def script_env(url: str, **extra: str) -> dict[str, str]:
    """This environment minus attest's own variables, pointed at `url`, with attest importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTEST_", "OLLAMA_"))}
    return {**env, "ATTEST_OPENAI_BASE_URL": url, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **extra}


def reaction_command(cache_dir: Path, *args: str) -> list[str]:
    """`python evals/run_reaction_eval.py --backend openai --cache-dir D --split all ARGS...`."""
    script = str(ROOT / "evals" / "run_reaction_eval.py")
    return [sys.executable, script, "--backend", "openai", "--cache-dir", str(cache_dir), "--split", "all", *args]


# --- as a script -----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Serve a fake OpenAI-compatible chat endpoint on 127.0.0.1.")
    parser.add_argument("--port-file", type=Path, required=True, help="write the port here once listening")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free one)")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each answer")
    parser.add_argument("--fault", choices=FAULTS, default="ok", help="how to answer every request (default ok)")
    parser.add_argument("--log", type=Path, help="append each fully answered request body here, one JSON line each")
    return parser


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    server = FakeServer(delay=args.delay, port=args.port)
    server.fail(args.fault)
    if args.log is not None:
        log: Path = args.log
        server.on_answered = lambda record: _append_line(log, record.body)
    signal.signal(signal.SIGTERM, _stop)
    server.start()
    tmp = args.port_file.with_name(args.port_file.name + ".tmp")
    tmp.write_text(str(server.port), encoding="utf-8")
    os.replace(tmp, args.port_file)
    try:
        while True:
            time.sleep(3600)
    except (SystemExit, KeyboardInterrupt):
        server.stop()
    return 0


def _append_line(path: Path, body: Body) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(body) + "\n")


if __name__ == "__main__":
    sys.exit(main())
