"""Figure 6, side by side with Inspect AI on the same server: cold eval, warm eval, re-score.

The same reaction cases as an Inspect task (benchmarks/inspect_reaction.py: the
same rendered messages, options and full JSON schema, attest's own scorer) against
the same `local` llama.cpp server through Inspect's OpenAI-compatible provider,
with Inspect's cache on and one connection (attest's `local` default is one
request at a time too). Both tools run in-process for the cold and warm evals
(imports paid once, outside the timings), and as the commands a user types for
the warm rerun and for re-scoring (`inspect score --action overwrite --model none`
against `python -m evals.rescore --run ID`). Ratios are Inspect / attest, in the
same round (see benchmarks/_rounds.py).
"""

from __future__ import annotations

from benchmarks import _rounds
from benchmarks._common import Row, Spread, print_rows, script_command

WIDE = 2.0  # "faster by a wide margin": Inspect takes at least this many times as long


def _pair(m: _rounds.Rounds, ours: str, theirs: str) -> tuple[Spread, Spread, Spread]:
    a, b = m.values(ours), m.values(theirs)
    return Spread.of(a), Spread.of(b), Spread.of(y / x for x, y in zip(a, b, strict=True))


def run() -> list[Row]:
    m = _rounds.measure()
    cmd = script_command("fig6_inspect.py")
    rows = []
    ours, theirs, ratio = _pair(m, "ours_cold", "inspect_cold")
    own_ours = Spread.of((w - t) / t for w, t in zip(m.values("ours_cold"), m.values("ours_model"), strict=True))
    own_theirs = Spread.of(
        (w - t) / t for w, t in zip(m.values("inspect_cold"), m.values("inspect_model"), strict=True)
    )
    same = sum(r.same_answers for r in m.rounds)
    rows.append(
        Row(
            "6. vs Inspect AI: cold eval",
            f"attest {ours.fmt(unit='s')}",
            f"Inspect {theirs.fmt(unit='s')}",
            f"{ratio.fmt()} (Inspect / attest)",
            "none (model-bound); reported",
            None,
            cmd,
            [
                f"{len(m.cases)} reaction cases ({', '.join(m.cases)}), local llama.cpp ({m.model}); "
                f"identical answer text from both tools in {same} of {len(m.cases) * len(m.rounds)} samples",
                f"own share of the cold eval, (wall - model time) / model time: attest {own_ours.fmt(100, '%')}, "
                f"Inspect {own_theirs.fmt(100, '%')}",
            ],
        )
    )
    for label, ours_key, theirs_key, what in (
        ("warm eval, in-process", "ours_warm", "inspect_warm", "evals.cli.runner.main vs inspect_ai.eval, all cached"),
        ("warm eval, as commands", "ours_cli_warm", "inspect_cli_warm", "run_reaction_eval.py vs `inspect eval`"),
        (
            "re-score a run, as commands",
            "ours_rescore_cli",
            "inspect_score_cli",
            "`python -m evals.rescore` vs `inspect score`",
        ),
    ):
        ours, theirs, ratio = _pair(m, ours_key, theirs_key)
        rows.append(
            Row(
                f"6. vs Inspect AI: {label}",
                f"attest {ours.fmt(unit='s')}",
                f"Inspect {theirs.fmt(unit='s')}",
                f"{ratio.fmt()} (Inspect / attest)",
                f">= {WIDE:g} (attest faster by a wide margin)",
                ratio.median >= WIDE,
                cmd,
                [what],
            )
        )
    return rows


if __name__ == "__main__":
    print_rows(run())
