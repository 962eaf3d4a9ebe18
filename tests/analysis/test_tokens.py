"""Tokens and cost (issue 34, item 4): the report's `tokens` line sums what the model server reported
(`usage`), a warm run says what the cache saved, `--prices` / ATTEST_PRICES adds a `cost` line, the
stub is free and says so, and a bad price list is one line naming the file, model and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals import reaction_eval
from evals.analysis.tokens import Price, spent_and_saved
from evals.cli import runner
from tests.reliability.fakeserver import FakeServer

PRICES = '["fake-model"]\ninput = 2.5\noutput = 10.0\n'


def _run(capsys: pytest.CaptureFixture[str], cache: Path, *args: str, backend: str = "openai") -> tuple[int, str, str]:
    capsys.readouterr()
    argv = ["--backend", backend, "--cache-dir", str(cache), *args]
    if backend == "openai":
        argv += ["--model", "fake-model"]
    code = runner.main(reaction_eval.TASK, argv)
    got = capsys.readouterr()
    return code, got.out, got.err


def _varied(body: dict[str, Any]) -> dict[str, int]:
    """Usage that differs from request to request, so a sum over the wrong answers cannot match."""
    size = len(json.dumps(body.get("messages")))
    return {"prompt_tokens": size // 4, "completion_tokens": 7 + size % 13, "total_tokens": size // 4 + 7 + size % 13}


def _line(out: str, name: str) -> str:
    (line,) = [x for x in out.splitlines() if x.startswith(f"  {name} ")]
    return line.split(None, 1)[1]


def test_tokens_sum_the_servers_usage_and_a_warm_run_says_what_the_cache_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES, encoding="utf-8")
    with FakeServer() as server:
        server.usage = _varied
        monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", server.url)
        code, out, err = _run(capsys, tmp_path, "--limit", "6", "--repeat", "2", "--prices", str(prices))
        assert code == 0, err
        usage = [server.answered_usage(r) for r in server.answered]
        assert len(usage) == 12
        sent_in, sent_out = sum(u["prompt_tokens"] for u in usage), sum(u["completion_tokens"] for u in usage)
        assert _line(out, "tokens") == f"in {sent_in:,}, out {sent_out:,}"
        spent = (sent_in * 2.5 + sent_out * 10.0) / 1e6
        assert _line(out, "cost").startswith(f"{spent:.4f} spent, 0.0000 saved by the cache (prices per million")
        page = Path(_line(out, "page")).read_text(encoding="utf-8")
        assert f"<dt>tokens</dt><dd>in {sent_in:,}, out {sent_out:,}</dd>" in page
        assert f"<dt>cost</dt><dd>{spent:.4f} spent, 0.0000 saved by the cache" in page
        before = server.count
        monkeypatch.setenv("ATTEST_PRICES", str(prices))
        code, out, err = _run(capsys, tmp_path, "--limit", "10", "--repeat", "2", "--json")
        assert code == 0, err
        report: dict[str, Any] = json.loads(out)
        new = [server.answered_usage(r) for r in server.answered[before:]]
    tokens, generate = report["generate"]["tokens"], report["generate"]
    assert generate["misses"] == len(new) and generate["hits"] > 0
    assert tokens["in"] - tokens["saved_in"] == sum(u["prompt_tokens"] for u in new)
    assert tokens["out"] - tokens["saved_out"] == sum(u["completion_tokens"] for u in new)
    assert tokens["saved_in"] > 0 and tokens["unreported"] == 0


def test_the_stub_is_free_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, tmp_path, "--limit", "3", backend="stub")
    assert code == 0, err
    assert _line(out, "tokens") == "none reported by the model server"
    assert _line(out, "cost") == "free: the stub backend calls no model"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('["m"]\ninput = 1\n', "model 'm': give exactly `input = N` and `output = N`"),
        ('["m"]\ninput = -1\noutput = 2\n', "model 'm': field 'input' must be a price per million tokens"),
        ("not toml [", "cannot read the price list"),
    ],
    ids=["missing-field", "negative", "not-toml"],
)
def test_a_bad_price_list_is_one_line_before_any_model_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str
) -> None:
    prices = tmp_path / "p.toml"
    prices.write_text(text, encoding="utf-8")
    code, out, err = _run(capsys, tmp_path, "--prices", str(prices), backend="stub")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert f"{prices}: {said}" in err or (said in err and str(prices) in err), err
    assert not (tmp_path / "runs").exists()


def test_cost_is_what_was_asked_for_and_what_the_cache_saved() -> None:
    tokens = {"in": 3_000_000, "out": 1_000_000, "saved_in": 1_000_000, "saved_out": 500_000}
    assert spent_and_saved(tokens, Price(1.0, 4.0)) == pytest.approx((2.0 + 2.0, 1.0 + 2.0))


def test_compare_shows_both_runs_tokens_and_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals import compare

    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES, encoding="utf-8")
    assert _run(capsys, tmp_path, "--limit", "4", backend="stub")[0] == 0
    with FakeServer() as server:
        monkeypatch.setenv("ATTEST_OPENAI_BASE_URL", server.url)
        assert _run(capsys, tmp_path, "--limit", "4")[0] == 0
    refs = ["reaction@latest,subset=limit,backend=stub", "reaction@latest,subset=limit,backend=openai"]
    capsys.readouterr()
    page = tmp_path / "compare.html"
    compare.main(["--cache-dir", str(tmp_path), "--prices", str(prices), *refs, "--html", str(page)])
    out = capsys.readouterr().out
    card = page.read_text(encoding="utf-8").split('<div class="card tokens">', 1)[1].split("</div></div>", 1)[0]
    assert "candidate in 400, out 80" in card and "baseline free: the stub backend calls no model" in card
    assert "tokens      baseline none reported by the model server\n" in out
    assert "            candidate in 400, out 80\n" in out  # 4 answers of the fake's fixed usage
    assert "cost        baseline free: the stub backend calls no model\n" in out
    assert f"            candidate {(400 * 2.5 + 80 * 10.0) / 1e6:.4f} spent, 0.0000 saved" in out
    compare.main(["--cache-dir", str(tmp_path), "--json", *refs])
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs["candidate"]["tokens"]["in"] == 400 and runs["candidate"]["cost"] is None
    assert runs["baseline"]["cost"] == "free: the stub backend calls no model"
