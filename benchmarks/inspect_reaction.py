"""The reaction eval as an Inspect AI task, for figure 6 (side by side with Inspect AI).

Same cases, same rendered messages (attest's own renderer), same options and the
same full JSON schema as attest sends (through `extra_body`, because Inspect's
OpenAI-compatible provider drops `maxLength`, `minimum` and `maximum` from a
`response_schema`), and attest's own `score_one` as the scorer, so that the two
tools differ only in their machinery. Run it with

    LLAMACPP_BASE_URL=http://127.0.0.1:PORT/v1 LLAMACPP_API_KEY=none \\
    inspect eval benchmarks/inspect_reaction.py --model openai-api/llamacpp/MODEL -T ids=a,b,c
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import TaskState, generate

from attest.backends.settings import Settings
from evals import reaction_eval
from evals.corpus.cases import ReactionCase


def response_format() -> dict[str, Any]:
    """The `response_format` body field exactly as attest's OpenAI-compatible backend sends it."""
    schema = reaction_eval.TASK.schema
    return {
        "type": "json_schema",
        "json_schema": {"name": str(schema.get("title", "answer")), "schema": schema, "strict": True},
    }


def _sample(case: ReactionCase) -> Sample:
    system, user = reaction_eval.render(case)
    return Sample(
        input=[ChatMessageSystem(content=system["content"]), ChatMessageUser(content=user["content"])],
        target="true" if case.verdict else "false",
        id=case.id,
        metadata=case.model_dump(),
    )


@scorer(metrics=[mean()])
def attest_reaction_score():  # type: ignore[no-untyped-def]
    """attest's reaction `score_one`, unchanged."""

    async def score(state: TaskState, target: Target) -> Score:
        case = ReactionCase.model_validate(state.metadata)
        scored = reaction_eval.score_one(case, state.output.completion)
        return Score(
            value=float(scored["score"]), answer=state.output.completion, explanation="; ".join(scored["errors"])
        )

    return score


@task
def reaction(ids: str | list[str] = "") -> Task:
    """The reaction cases named in `ids` (comma-separated, or a list as `-T ids=a,b` gives; default: dev)."""
    wanted = [i for i in (ids.split(",") if isinstance(ids, str) else ids) if i]
    by_id = {c.id: c for c in reaction_eval.load_cases()}
    cases = [by_id[i] for i in wanted] if wanted else [c for c in by_id.values() if c.split == "dev"]
    options = Settings().options
    return Task(
        dataset=MemoryDataset([_sample(c) for c in cases]),
        solver=generate(cache=True),
        scorer=attest_reaction_score(),
        config=GenerateConfig(
            temperature=options["temperature"],
            seed=options["seed"],
            max_tokens=options["max_tokens"],
            extra_body={"response_format": response_format()},
        ),
    )
