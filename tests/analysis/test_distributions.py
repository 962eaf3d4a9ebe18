"""The scipy-free tail functions the command lines use agree with scipy's; the local backend's settings are keyed."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats as sps  # type: ignore[import-untyped]

from attest.backends.llamacpp import LocalServerError, ServerSettings, usable_cpus
from evals.analysis import distributions as dist


@pytest.mark.parametrize("df", [1, 2, 3, 7, 30, 143, 225, 5000])
def test_student_t_matches_scipy(df: int) -> None:
    for p in (0.5, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.025):
        assert dist.t_ppf(p, df) == pytest.approx(float(sps.t.ppf(p, df)), rel=1e-9, abs=1e-12)
    for t in (0.0, 0.3, 1.0, 2.5, 6.0):
        assert dist.t_sf(t, df) == pytest.approx(float(sps.t.sf(t, df)), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("n", [1, 2, 9, 40, 144, 226, 1500])
def test_binomial_and_wilson_match_scipy(n: int) -> None:
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        if not 0 <= k <= n:
            continue
        assert dist.binom_two_sided_half(k, n) == pytest.approx(float(sps.binomtest(k, n, 0.5).pvalue), rel=1e-9)
        ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert dist.wilson(k, n, 0.95) == pytest.approx((float(ci.low), float(ci.high)), abs=1e-12)


def test_root_finds_the_crossing() -> None:
    assert dist.root(lambda x: x * x - 2.0, 0.0, 2.0) == pytest.approx(math.sqrt(2.0), abs=1e-11)


def test_compare_on_binary_runs_imports_no_scipy() -> None:
    code = "import sys, evals.compare, evals.runs; sys.exit(any(m.startswith('scipy') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=120).returncode == 0


def test_local_server_settings_default_to_one_thread_servers_per_usable_cpu() -> None:
    settings = ServerSettings.resolve({})
    assert (settings.threads, settings.slots, settings.servers) == (1, 1, usable_cpus())
    both = ServerSettings.resolve({"ATTEST_LOCAL_THREADS": "2", "ATTEST_LOCAL_SLOTS": "3", "ATTEST_LOCAL_SERVERS": "1"})
    assert both.key() == {"threads": 2, "slots": 3}  # the server count cannot change an answer: not in the key
    with pytest.raises(LocalServerError, match="ATTEST_LOCAL_THREADS='0'"):
        ServerSettings.resolve({"ATTEST_LOCAL_THREADS": "0"})


def test_the_local_backends_threads_and_slots_are_in_its_cache_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from attest.backends.local import LocalBackend
    from evals.store.keys import Identity, request_key

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the gguf digest memo stays out of the user's cache

    keys = set()
    for threads, slots, servers in ((1, 1, 1), (1, 1, 2), (2, 1, 1), (1, 2, 1)):
        backend = LocalBackend(server=ServerSettings(threads, slots, servers))
        assert backend.options["server"] == {"threads": threads, "slots": slots}
        keys.add(request_key(Identity.of(backend), [{"role": "user", "content": "x"}], {}, 0))
    assert len(keys) == 3  # servers=2 shares the key of servers=1
