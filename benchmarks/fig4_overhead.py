"""Figure 4, pipeline overhead on a cold run: the generate stage against bare HTTP requests.

The same reaction cases go to the same `local` llama.cpp server twice per round
(see benchmarks/_rounds.py): once through attest's generate stage with a fresh
cache (in a whole in-process eval, `evals.cli.runner.main --backend local`), once as
bare sequential `httpx` POSTs of the identical request bodies. A throwaway request
before each leaves the server's prompt cache in the same state; the order rotates.

The figure is the median over rounds of (generate stage time / bare time). The
model's time varies by several percent from run to run on a shared machine, so the
notes also give the pipeline's own share measured inside each cold run: the
generate stage's wall time minus the time its model calls took, over the latter.
"""

from __future__ import annotations

from benchmarks import _rounds
from benchmarks._common import Row, Spread, print_rows, script_command

TARGET = 0.03  # at most this much added to the model's time


def run() -> list[Row]:
    m = _rounds.measure()
    gen, bare, model = m.values("ours_generate"), m.values("bare"), m.values("ours_model")
    whole = m.values("ours_cold")
    ratio = Spread.of(g / b for g, b in zip(gen, bare, strict=True))
    whole_ratio = Spread.of(w / b for w, b in zip(whole, bare, strict=True))
    own = Spread.of((g - t) / t for g, t in zip(gen, model, strict=True))
    return [
        Row(
            "4. pipeline overhead, cold run",
            f"generate stage {Spread.of(gen).fmt(unit='s')}",
            f"bare sequential httpx POSTs {Spread.of(bare).fmt(unit='s')}",
            f"{ratio.fmt()} (generate / bare)",
            f"< {1 + TARGET:.2f} (adds < {TARGET:.0%})",
            ratio.median < 1 + TARGET,
            script_command("fig4_overhead.py"),
            [
                f"{len(m.cases)} reaction cases, local llama.cpp ({m.model}), one slot, one thread; "
                f"order rotated each round; prompt cache reset to the system prompt before each run",
                m.calibration,
                f"identical answer text from the pipeline and the bare POSTs in {sum(r.bare_same for r in m.rounds)} "
                f"of {len(m.cases) * len(m.rounds)} samples",
                f"own share in each cold run, (generate wall - model call time) / model call time: {own.fmt(100, '%')}",
                f"the whole in-process eval (plan, manifest, generate, score, report) / bare: {whole_ratio.fmt()}",
            ],
        )
    ]


if __name__ == "__main__":
    print_rows(run())
