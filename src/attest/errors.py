"""The one base class for errors attest reports to a user as a single line."""

from __future__ import annotations


class AttestError(Exception):
    """An error with a message fit to show a user: what failed, where, and what to do."""
