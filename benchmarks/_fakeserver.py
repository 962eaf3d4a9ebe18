"""A fake OpenAI-compatible chat server for figure 3: a real socket, a fixed delay, k slots.

`python -m benchmarks._fakeserver --slots 8 --delay 0.1` listens on a free
127.0.0.1 port and prints it on stdout. Every `POST /v1/chat/completions` waits
for one of `slots` slots, holds it `delay` seconds and answers a valid Reaction.
`GET /stats` returns the most requests it ever had in flight (received, not yet
answered) and the request count since the last `GET /stats?reset=1`.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

ANSWER = json.dumps({"verdict": True, "confidence": 3, "reasoning": "The fake server always reads the item."})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, no 40 ms delayed-ACK stall
    slots: ClassVar[threading.BoundedSemaphore]
    delay: ClassVar[float]
    lock: ClassVar[threading.Lock] = threading.Lock()
    in_flight: ClassVar[int] = 0
    max_in_flight: ClassVar[int] = 0
    requests: ClassVar[int] = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.requests += 1
            cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)
        try:
            with cls.slots:
                time.sleep(cls.delay)
        finally:
            with cls.lock:
                cls.in_flight -= 1
        self._send(
            {
                "model": "fake",
                "system_fingerprint": "fake-v1",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10},
            }
        )

    def do_GET(self) -> None:
        cls = type(self)
        with cls.lock:
            body = {"max_in_flight": cls.max_in_flight, "requests": cls.requests}
            if self.path.endswith("reset=1"):
                cls.max_in_flight = cls.requests = 0
        self._send(body)

    def _send(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.1)
    args = parser.parse_args()
    _Handler.slots = threading.BoundedSemaphore(args.slots)
    _Handler.delay = args.delay
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
