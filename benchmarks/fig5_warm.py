"""Figure 5, warm rerun: the whole reaction eval with everything cached, against the cold run.

Cold: `evals.cli.runner.main` in-process with `--backend local` and a fresh cache dir
(see benchmarks/_rounds.py). Warm: the same call again on the same cache dir; it
must make no model call. The second row times the warm rerun as the command a
user types (`python evals/run_reaction_eval.py --backend local ...`, a new
process: interpreter start and imports included) against the same in-process
cold run; its ratio falls as the case count grows, the process start does not.
"""

from __future__ import annotations

from benchmarks import _rounds
from benchmarks._common import Row, Spread, print_rows, script_command

TARGET = 0.02  # warm at most this fraction of cold


def run() -> list[Row]:
    m = _rounds.measure()
    cold, warm, cli = m.values("ours_cold"), m.values("ours_warm"), m.values("ours_cli_warm")
    ratio = Spread.of(w / c for w, c in zip(warm, cold, strict=True))
    cli_ratio = Spread.of(w / c for w, c in zip(cli, cold, strict=True))
    case_note = f"{len(m.cases)} reaction cases, local llama.cpp ({m.model}); cold = fresh cache dir"
    return [
        Row(
            "5. warm rerun, in-process",
            f"warm {Spread.of(warm).fmt(1000, 'ms')}",
            f"cold {Spread.of(cold).fmt(unit='s')}",
            f"{ratio.fmt(100, '%')} of cold",
            f"< {TARGET:.0%} of cold",
            ratio.median < TARGET,
            script_command("fig5_warm.py"),
            [case_note, f"per cached sample, end to end: {Spread.of(w / len(m.cases) for w in warm).fmt(1000, 'ms')}"],
        ),
        Row(
            "5. warm rerun, as a command",
            f"warm process {Spread.of(cli).fmt(unit='s')}",
            f"cold in-process {Spread.of(cold).fmt(unit='s')}",
            f"{cli_ratio.fmt(100, '%')} of cold",
            f"< {TARGET:.0%} of cold",
            cli_ratio.median < TARGET,
            script_command("fig5_warm.py"),
            [
                "python evals/run_reaction_eval.py --backend local --corpus SUBSET --split all --cache-dir D --json, "
                "a new process each time: interpreter start, imports, corpus, plan, cached generate, score, report"
            ],
        ),
    ]


if __name__ == "__main__":
    print_rows(run())
