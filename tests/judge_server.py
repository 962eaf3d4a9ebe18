"""A fake OpenAI-compatible judge on 127.0.0.1: right about each entry with a known probability.

    with FakeJudge(grades, right=lambda entry_id: 0.9) as judge:
        env ATTEST_OPENAI_BASE_URL=judge.url; python -m evals.judge_check ... --judge-backend openai
    judge.record  # [(entry id, human grade, the grade it answered), ...] in answer order

`grades` maps (title, note text) to (entry id, human grade): the fake reads the `Title:`
and `Note:` lines of the judge request, as a model would read them (a request it has no
grade for is recorded under "title / note" with human grade "unknown"). Each answer is drawn
from a generator seeded by the entry id and how often that entry was asked, so a run is
reproducible. `answer` overrides the draw (e.g. always "pass", or text that is no JSON).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import random
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["FakeJudge"]

Key = tuple[str, str]


class FakeJudge:
    def __init__(
        self,
        grades: Mapping[Key, tuple[str, str]],
        *,
        right: Callable[[str], float] = lambda entry_id: 1.0,
        answer: Callable[[str, str], str] | None = None,
        seed: int = 7,
    ) -> None:
        self.grades = dict(grades)
        self.right = right
        self.answer = answer
        self.seed = seed
        self.record: list[tuple[str, str, str]] = []
        self.asked: dict[str, int] = {}
        self.requests = 0
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeJudge:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply(self, body: Mapping[str, Any]) -> str:
        """The judge's answer text to one chat request."""
        user = body["messages"][-1]["content"]
        title = _line(user, "Title")
        note = _line(user, "Note")
        entry_id, human = self.grades.get((title, note), (f"{title} / {note}", "unknown"))
        with self._lock:
            self.requests += 1
            n = self.asked.get(entry_id, 0)
            self.asked[entry_id] = n + 1
        if self.answer is not None:
            text = self.answer(entry_id, human)
        else:
            draw = random.Random(_seed(self.seed, entry_id, n)).random()
            if human == "unknown":  # a request no grade was given for (an eval's answer): a fair coin
                grade = "pass" if draw < 0.5 else "fail"
            else:
                grade = human if draw < self.right(entry_id) else ("fail" if human == "pass" else "pass")
            text = json.dumps({"grade": grade, "reason": "fake"})
        with self._lock:
            self.record.append((entry_id, human, _grade_of(text)))
        return text

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        judge = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                text = judge.reply(body)
                self._send(
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "model": body.get("model", "fake-judge"),
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
                        "system_fingerprint": "fp_fakejudge",
                    }
                )

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "fake-judge", "object": "model"}]})

            def _send(self, payload: Mapping[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


def _line(text: str, label: str) -> str:
    match = re.search(rf"^{label}: (.*)$", text, flags=re.MULTILINE)
    assert match, f"no {label}: line in the judge request"
    return match.group(1)


def _seed(seed: int, entry_id: str, n: int) -> int:
    return int(hashlib.sha256(f"{seed}:{entry_id}:{n}".encode()).hexdigest()[:12], 16)


def _grade_of(text: str) -> str:
    try:
        grade = json.loads(text).get("grade")
    except (ValueError, AttributeError):
        return "unparseable"
    return grade if grade in ("pass", "fail") else "unparseable"
