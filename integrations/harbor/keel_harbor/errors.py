"""keel's failures as Harbor's error classes.

Decided from keel's exit status and the fields of its JSON result (``subtype``,
``terminal_reason``, ``api_error_kind``), never from its messages: Harbor's retry and grading
policy is keyed by the class name, so a rate limit must not pass for a wrong key because of
how a message was worded.
"""

from __future__ import annotations

from typing import Any

from harbor.agents.installed.base import (
    AgentAuthenticationError,
    ApiConnectionClosedError,
    ApiInternalServerError,
    ApiOverloadedError,
    ApiRateLimitError,
    ContextWindowExceededError,
    ModelNotFoundError,
    NetworkConnectionError,
    NonZeroAgentExitCodeError,
    UnknownApiError,
)

# keel's `api_error_kind` (README: Output formats) → Harbor's class.
API_ERRORS: dict[str, type[NonZeroAgentExitCodeError]] = {
    "authentication": AgentAuthenticationError,
    "rate_limit": ApiRateLimitError,
    "overloaded": ApiOverloadedError,
    "server_error": ApiInternalServerError,
    "context_window": ContextWindowExceededError,
    "not_found": ModelNotFoundError,
    "invalid_request": UnknownApiError,
    "unreachable": NetworkConnectionError,
    "connection": ApiConnectionClosedError,
    "bad_response": UnknownApiError,
    "malformed_stream": UnknownApiError,
    # keel was set up wrong for the provider: no retry helps, nothing the model did is at fault.
    "configuration": NonZeroAgentExitCodeError,
}


def classify(exit_code: int, result: dict[str, Any] | None) -> type[NonZeroAgentExitCodeError] | None:
    """The class to raise for a finished keel run, or ``None`` when it succeeded.

    A run that stopped at its turn or budget limit, was interrupted, or failed in a way that
    is not the model API's is a plain ``NonZeroAgentExitCodeError``: Harbor still grades the
    work it left.
    """
    if result is None or not isinstance(result, dict):
        # No result object: keel did not get as far as printing one (it crashed or was killed).
        return NonZeroAgentExitCodeError
    if exit_code == 0 and result.get("is_error") is False:
        return None
    kind = result.get("api_error_kind")
    if isinstance(kind, str) and kind in API_ERRORS:
        return API_ERRORS[kind]
    if result.get("terminal_reason") == "prompt_too_long":
        return ContextWindowExceededError
    return NonZeroAgentExitCodeError


def describe(exit_code: int, result: dict[str, Any] | None, stderr_tail: str) -> str:
    """The message of the raised error, for people reading the trial's result."""
    if not isinstance(result, dict):
        return f"keel exited with status {exit_code} without a result object; stderr ends with:\n{stderr_tail}"
    fields = {k: result.get(k) for k in ("subtype", "terminal_reason", "api_error_kind", "api_error_status")}
    named = ", ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
    errors = result.get("errors") or []
    text = "; ".join(str(e) for e in errors) if isinstance(errors, list) else str(errors)
    return f"keel exited with status {exit_code} ({named}): {text}"
