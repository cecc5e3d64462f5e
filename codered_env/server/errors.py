"""Error answers: short, bounded, and never an echo of the input.

FastAPI's default 422 copies every offending input value into the response (a 1 MB body gives
a 1 MB answer, and a NaN in it makes the answer itself unserialisable: a 500). Here a
validation error lists at most ``MAX_ERRORS`` problems as ``{loc, msg, type}``, each message cut
to ``MAX_MESSAGE_CHARS``; unexpected errors log one line and answer a generic 500.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from codered_env.server.environment import SessionClosedError
from codered_env.server.http_sessions import AdmissionRefused, SessionGone, SessionNotFound

logger = logging.getLogger("codered_env.server")

MAX_ERRORS = 5
MAX_MESSAGE_CHARS = 200
MAX_LOC_PARTS = 6


def _short(text: Any, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _loc(loc: Iterable[Any]) -> list[str | int]:
    parts = [p if isinstance(p, int) else _short(p, 40) for p in loc]
    return parts[:MAX_LOC_PARTS]


def compact_errors(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pydantic/FastAPI errors without ``input``, ``ctx`` or ``url``, at most ``MAX_ERRORS``."""
    out: list[dict[str, Any]] = []
    for error in errors:
        if len(out) == MAX_ERRORS:
            break
        out.append(
            {
                "loc": _loc(error.get("loc", ())),
                "msg": _short(error.get("msg", "invalid value")),
                "type": _short(error.get("type", "value_error"), 60),
            }
        )
    return out


def register_error_handlers(app: FastAPI) -> None:
    async def validation(_: Request, exc: Exception) -> JSONResponse:
        errors = exc.errors() if isinstance(exc, (RequestValidationError, ValidationError)) else []
        return JSONResponse({"detail": compact_errors(errors)}, status_code=422)

    async def not_found(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": _short(exc, 400)}, status_code=404)

    async def gone(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": _short(exc, 400)}, status_code=410)

    async def refused(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, AdmissionRefused)
        return JSONResponse(
            {"detail": _short(exc.message, 400), "retry_after_s": exc.retry_after_s},
            status_code=exc.status,
            headers={"Retry-After": str(exc.retry_after_s)},
        )

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.error(
            "unhandled %s on %s %s: %s",
            type(exc).__name__,
            request.method,
            request.url.path,
            _short(exc, 160),
        )
        return JSONResponse(
            {"detail": f"internal error ({type(exc).__name__}); the server state is unchanged"},
            status_code=500,
        )

    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(ValidationError, validation)
    app.add_exception_handler(SessionNotFound, not_found)
    app.add_exception_handler(SessionGone, gone)
    app.add_exception_handler(SessionClosedError, gone)
    app.add_exception_handler(AdmissionRefused, refused)
    app.add_exception_handler(Exception, unexpected)
