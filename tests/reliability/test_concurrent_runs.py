"""Four runs at once on one cache: no errors, no corrupt entries, every manifest complete, no duplicate calls.

Four `run_reaction_eval.py --backend openai` processes start together on a fresh cache
directory, each on its own corpus file; the case sets overlap (most cases are in two
or three of them). They share one fake server (20 ms per answer, 4 requests in flight
per process). The cache's per-key lease should make every distinct request reach the
server once: the figure reported is the number of duplicate model calls.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from attest.backends.settings import Settings
from evals.engine.pipeline import plan
from evals.reaction_eval import TASK, load_cases
from evals.store.keys import Identity
from evals.store.local.cache import ResponseCache
from tests.reliability.fakeserver import ROOT, FakeServer, reaction_answer, reaction_command, script_env
from tests.reliability.helpers import write_corpus

# Slices of the reaction corpus: of cases 0-79, 20 are in three slices, 40 in two, 20 in one.
SLICES = (slice(0, 40), slice(20, 60), slice(40, 80), slice(0, 80, 2))


def _write_corpora(tmp_path: Path) -> list[Path]:
    return [write_corpus(tmp_path, part, f"corpus-{n}.json") for n, part in enumerate(SLICES)]


def _expected(corpora: list[Path]) -> dict[str, str]:
    """request key -> the answer the server gives, over the union of the four corpora."""
    identity = Identity("openai", "fake-model", "", Settings().options)
    expected = {}
    for path in corpora:
        for p in plan(TASK, load_cases(path), identity, 1):
            expected[p.key] = reaction_answer({"messages": p.messages})
    return expected


@pytest.mark.slow
def test_four_overlapping_runs_share_one_cache(tmp_path: Path) -> None:
    corpora = _write_corpora(tmp_path)
    cache_dir = tmp_path / "cache"
    expected = _expected(corpora)
    started = time.monotonic()
    with FakeServer(delay=0.02) as server:
        env = script_env(server.url)
        procs = [
            subprocess.Popen(
                reaction_command(cache_dir, "--corpus", str(c)),
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for c in corpora
        ]
        outputs = [p.communicate(timeout=120) for p in procs]
        seen = Counter(r.messages_key for r in server.requests)
    seconds = time.monotonic() - started
    duplicates = sum(seen.values()) - len(seen)
    planned = sum(len(load_cases(c)) for c in corpora)
    print(
        f"\nreliability concurrent: runs {len(procs)}, planned samples {planned}, distinct requests {len(expected)}, "
        f"model calls {sum(seen.values())}, duplicate model calls {duplicates}, {seconds:.1f} s"
    )
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
        assert b"Traceback" not in err and b"error" not in err and b"warning" not in err, err.decode()
    manifests = [json.loads(p.read_text(encoding="utf-8")) for p in (cache_dir / "runs").glob("*/manifest.json")]
    assert sorted(m["status"] for m in manifests) == ["complete"] * len(procs)
    _assert_cache_intact(cache_dir, expected)
    assert len(seen) == len(expected)
    assert duplicates == 0


def _assert_cache_intact(cache_dir: Path, expected: dict[str, str]) -> None:
    cache = ResponseCache(cache_dir)
    try:
        for key, text in expected.items():
            entry = cache.get(key)
            assert entry is not None and entry.text == text, key
        assert cache.warnings == []
    finally:
        cache.close()
