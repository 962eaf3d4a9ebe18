"""The built-in model as explanation judge: its kappa against the human grades of the judgement corpus.

Runs `python -m evals.judge_check explanation --judge-backend local` on the dev split of
evals/explanation_judgements.json in a fresh cache and reports the kappa it prints (and
whether its lower bound reaches the 0.6 that would let `compare --metric judged` trust it).
Not a speed figure: it is here so that the judge the project ships with is measured
whenever the benchmarks run, and RESULTS.md says what it is worth.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from benchmarks._common import Row, print_rows, script_command, workdir

ROOT = Path(__file__).resolve().parent.parent


def run() -> list[Row]:
    cache = workdir("judge")
    argv = [sys.executable, "-m", "evals.judge_check", "explanation", "--judge-backend", "local", "--split", "dev"]
    done = subprocess.run(
        [*argv, "--cache-dir", str(cache)], cwd=ROOT, capture_output=True, text=True, timeout=3600, check=False
    )
    found = re.search(r"^kappa (\S+) \[(\S+), (\S+)\] n=(\d+)$", done.stdout, flags=re.MULTILINE)
    if done.returncode not in (0, 3) or found is None:
        raise RuntimeError(f"judge_check exited {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}")
    low = float(found[2])
    head = done.stdout.splitlines()[0]
    accuracy = next((line.split(None, 1)[1] for line in done.stdout.splitlines() if line.startswith("accuracy")), "")
    confusion = " / ".join(
        " ".join(line.split()) for line in done.stdout.splitlines() if line.strip().startswith("human ")
    )
    return [
        Row(
            "judge: the built-in model (SmolLM2, local) grading explanations",
            f"kappa {found[1]} [{found[2]}, {found[3]}] n={found[4]}",
            "the human grades of the judgement corpus (dev split)",
            f"accuracy {accuracy}",
            "validated when kappa's lower bound >= 0.6; reported",
            None,
            script_command("bench_judge.py"),
            [
                head,
                f"confusion (judge pass, judge fail): {confusion}",
                "validated"
                if low >= 0.6
                else "not validated: SmolLM2 is not a usable judge (point --judge-backend "
                "ollama at a real model and run judge_check)",
            ],
        )
    ]


if __name__ == "__main__":
    print_rows(run())
