"""Secrets: the openai backend's API key reaches the server and nothing else.

Three real runs in subprocesses against the fake server: one with key A, one with key
B on the same cache (it must be all cache hits: the key is not part of the cache
key), and one where the server refuses key A with a 401 whose message echoes the
credential back, as careless proxies do. Then every byte written is searched: each
file under the cache directory (database, WAL, value files, manifests, reports) and
all of stdout and stderr. The server's own record shows it did receive the key, so
the search would have found it had it leaked.
"""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from tests.reliability.fakeserver import ROOT, FakeServer, reaction_command, script_env
from tests.reliability.helpers import write_corpus


def _corpus(tmp_path: Path, part: slice) -> Path:
    return write_corpus(tmp_path, part, f"corpus-{part.start}-{part.stop}.json")


def _run(server: FakeServer, cache: Path, corpus: Path, key: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    command = reaction_command(cache, "--corpus", str(corpus), "--retries", "1", *extra)
    env = script_env(server.url, ATTEST_OPENAI_API_KEY=key)
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=60)


def _leaks(needles: list[bytes], cache_dir: Path, outputs: list[bytes]) -> list[str]:
    """Where any needle occurs: files under the cache directory, and the captured outputs."""
    found = []
    for path in sorted(p for p in cache_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(cache_dir)}" for n in needles if n in data]
    found += [f"output #{i}" for i, out in enumerate(outputs) for n in needles if n in out]
    return found


@pytest.mark.slow
def test_the_api_key_is_sent_to_the_server_and_written_nowhere(tmp_path: Path) -> None:
    tokens = [secrets.token_hex(16), secrets.token_hex(16)]
    key_a, key_b = (f"sk-test-{t}" for t in tokens)
    corpus, cache_dir = _corpus(tmp_path, slice(0, 4)), tmp_path / "cache"
    with FakeServer() as server:
        first = _run(server, cache_dir, corpus, key_a)
        sent = server.count
        second = _run(server, cache_dir, corpus, key_b, "--json")
        hits_only = server.count == sent
        server.fail("401")
        refused = _run(server, cache_dir, _corpus(tmp_path, slice(4, 5)), key_a)  # not cached yet: asks
        headers = [r.headers.get("authorization") for r in server.requests]
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    assert hits_only, "a different API key must not change the cache key"
    assert refused.returncode == 1 and b"refused the request (401" in refused.stderr, refused.stderr
    assert headers == [f"Bearer {key_a}"] * sent + [f"Bearer {key_a}"], "the server should have seen key A"

    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    outputs = [first.stdout, first.stderr, second.stdout, second.stderr, refused.stdout, refused.stderr]
    leaks = _leaks([t.encode() for t in tokens], cache_dir, outputs)
    print(
        f"\nreliability secrets: runs 3, requests carrying the key {len(headers)}, files searched {len(files)}, "
        f"output streams searched {len(outputs)}, places the key was found {len(leaks)}"
    )
    assert leaks == []
