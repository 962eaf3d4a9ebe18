"""Model backends: a rendered request goes in, the raw answer and its provenance come out.

The package is split so that each importer pays only for what it uses:

- `types`: the protocol and its value types (`Message`, `ChatResponse`, `ChatJSON`,
  `Backend`, `BackendError`); no transport, nothing from attest but `errors`.
- `settings`: `Settings`, configuration resolved once at an entry point.
- `retry`: `RetryPolicy` and the bounded retry loop.
- `transport`: the HTTP helpers the two HTTP backends share (httpx is imported only
  where a request is made).
- `ollama`, `openai`, `local`, `stub`, `auto`: one module per backend.
- `registry`: `REGISTRY` (kind -> factory), `KINDS` and `make_backend`; every
  command line's `--backend` choices come from it.

This file imports nothing, so importing `attest.backends.types` loads no backend.
"""

__all__: list[str] = []
