"""attest: a research-feed app whose features ask a local chat model for schema-bound JSON."""

__version__ = "0.1.0"
