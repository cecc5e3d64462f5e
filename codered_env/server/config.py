"""Server settings, read from environment variables once per app construction.

docs/SERVER.md lists every variable with its default; the numbers here are the defaults.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

KIB = 1024
DEFAULT_HOST = "127.0.0.1"  # loopback: a server is public only when asked (--host 0.0.0.0)
DEFAULT_PORT = 8000
STATE_DIR_OFF = ("off", "none", "memory", ":memory:")
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def default_host() -> str:
    """``HOST`` from the environment, else loopback (shared by ``server`` and ``codered serve``)."""
    return os.environ.get("HOST", "").strip() or DEFAULT_HOST


def default_port() -> int:
    return _int_env("PORT", DEFAULT_PORT)


def three_quarters(cap: int) -> int:
    """Default per-client share of a capped pool: one client can never hold every slot
    (design choice)."""
    return max(1, cap - cap // 4)


def _int_env(name: str, default: int, minimum: int = 1) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number, got {raw!r}") from exc
    if not 0 < value < float("inf"):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def _proxies_env(name: str) -> tuple[Network, ...]:
    raw = os.environ.get(name, "").strip()
    networks = []
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part, strict=False))
        except ValueError as exc:
            raise ValueError(f"{name}: {part!r} is not an IP address or network") from exc
    return tuple(networks)


def _state_dir_env(name: str) -> Path | None:
    from codered_env.server.journal import default_state_dir

    raw = os.environ.get(name, "").strip()
    if raw.lower() in STATE_DIR_OFF:
        return None
    return Path(raw).expanduser() if raw else default_state_dir()


def _origins_env(name: str) -> tuple[str, ...]:
    raw = os.environ.get(name, "*").strip() or "*"
    return tuple(part.strip().rstrip("/") for part in raw.split(",") if part.strip())


@dataclass(frozen=True)
class ServerSettings:
    """Everything tunable about the server (see docs/SERVER.md, "Limits").

    Attributes:
        max_concurrent_envs: WebSocket sessions served at once (``MAX_CONCURRENT_ENVS``).
        ws_per_client: WebSocket sessions one client address may hold at once (default: all;
            clients behind one proxy or NAT share an address).
        ws_evict_idle_s: at the cap, a new connection takes the slot of the connection silent
            the longest, if it has been silent this long (it can resume later).
        ws_resume_ttl_s: a WebSocket session whose connection dropped can be resumed
            (``/ws?session_id=``) for this long.
        ws_idle_timeout_s: a WebSocket that sends nothing this long is closed (1001).
        ws_max_frame_bytes: larger WebSocket frames close the socket (1009).
        http_max_sessions: stateful HTTP episodes kept at once; at the cap the least
            recently stepped idle one is evicted (never-stepped ones first).
        http_idle_ttl_s: a stepped HTTP episode not stepped for this long expires.
        http_unstepped_ttl_s: a reset that is never stepped expires after this long.
        http_fresh_grace_s: a new HTTP episode is never evicted before its first step within
            this time (at a full server, resets are refused with 503 instead).
        http_per_client: HTTP episodes one client address may hold.
        mcp_max_sessions: MCP sessions (``initialize`` or ``openenv/session/create`` on ``/mcp``)
            kept at once; at the cap the least recently used one is evicted (never-called first).
        mcp_ttl_s: an MCP session without a tool call (or attached ``/ws`` frame) this long expires.
        mcp_unused_ttl_s: an MCP session never used for a tool call expires after this long.
        mcp_sessions_per_minute: MCP sessions one client address may open a minute.
        mcp_fresh_grace_s / mcp_per_client: as for HTTP episodes.
        mcp_call_timeout_s: an MCP request not answered within this time gets a JSON-RPC error.
        trusted_proxies: peers whose ``X-Forwarded-For`` names the client (else it is ignored).
        state_dir: where the session journal lives (None: no journal, sessions in memory only).
        shutdown_grace_s: on SIGTERM, in-flight requests and WebSocket steps get this long to
            finish; what cannot finish is answered 503.
        max_body_bytes: body cap of every HTTP route except /grader.
        grader_max_body_bytes: body cap of ``POST /grader`` (500 actions fit).
        body_timeout_s: a request body must arrive completely within this time (else 408).
        header_timeout_s: request headers must arrive within this time (else the socket closes).
        max_connections: open sockets at once; more are closed on accept.
        heavy_jobs: agent runs (/grader agent mode, /baseline, /web replays) executing at once, in
            worker processes so they never hold the server's event loop.
        heavy_queue: agent runs allowed to wait for a worker; more get 503 at once.
        heavy_wait_s: how long a queued agent run waits before 503.
        heavy_per_minute: uncached agent runs one client address may start per minute.
        console_per_minute: uncached console replays (``POST /web/advice``, ``/web/frames``) one
            client address may start per minute (one per step of play; same worker pool).
        allowed_origins: ``Origin`` values accepted on ``/ws`` (``*`` = any); requests without
            an Origin header (non-browser clients) and same-origin pages are always accepted.
        enable_llm_baseline / baseline_token: ``/baseline`` with ``agent: llm`` needs both, and
            the request must carry ``Authorization: Bearer <token>``.
    """

    max_concurrent_envs: int = 64
    ws_per_client: int = 64
    ws_evict_idle_s: float = 30.0
    ws_resume_ttl_s: float = 600.0
    ws_idle_timeout_s: float = 300.0
    ws_max_frame_bytes: int = 64 * KIB
    http_max_sessions: int = 64
    http_idle_ttl_s: float = 600.0
    http_unstepped_ttl_s: float = 30.0
    http_fresh_grace_s: float = 10.0
    http_per_client: int = 48
    mcp_max_sessions: int = 64
    mcp_ttl_s: float = 1800.0
    mcp_unused_ttl_s: float = 300.0
    mcp_sessions_per_minute: int = 30
    mcp_fresh_grace_s: float = 10.0
    mcp_per_client: int = 48
    mcp_call_timeout_s: float = 30.0
    trusted_proxies: tuple[Network, ...] = ()
    state_dir: Path | None = field(default=None)
    shutdown_grace_s: float = 20.0
    max_body_bytes: int = 16 * KIB
    grader_max_body_bytes: int = 64 * KIB
    body_timeout_s: float = 10.0
    header_timeout_s: float = 10.0
    max_connections: int = 2048
    heavy_jobs: int = 1
    heavy_queue: int = 8
    heavy_wait_s: float = 30.0
    heavy_per_minute: int = 30
    console_per_minute: int = 300
    allowed_origins: tuple[str, ...] = ("*",)
    enable_llm_baseline: bool = False
    baseline_token: str | None = None

    @classmethod
    def from_env(cls) -> ServerSettings:
        return cls(
            max_concurrent_envs=(ws_cap := _int_env("MAX_CONCURRENT_ENVS", 64)),
            ws_per_client=_int_env("CODERED_WS_PER_CLIENT", ws_cap),
            ws_evict_idle_s=_float_env("CODERED_WS_EVICT_IDLE_S", 30.0),
            ws_resume_ttl_s=_float_env("CODERED_WS_RESUME_TTL_S", 600.0),
            ws_idle_timeout_s=_float_env("CODERED_WS_IDLE_TIMEOUT_S", 300.0),
            ws_max_frame_bytes=_int_env("CODERED_WS_MAX_FRAME_BYTES", 64 * KIB, minimum=1024),
            http_max_sessions=(http_cap := _int_env("CODERED_HTTP_MAX_SESSIONS", 64)),
            http_fresh_grace_s=_float_env("CODERED_HTTP_FRESH_GRACE_S", 10.0),
            http_per_client=_int_env("CODERED_HTTP_PER_CLIENT", three_quarters(http_cap)),
            http_idle_ttl_s=_float_env("CODERED_HTTP_TTL_S", 600.0),
            http_unstepped_ttl_s=_float_env("CODERED_HTTP_UNSTEPPED_TTL_S", 30.0),
            mcp_max_sessions=(mcp_cap := _int_env("CODERED_MCP_MAX_SESSIONS", 64)),
            mcp_fresh_grace_s=_float_env("CODERED_MCP_FRESH_GRACE_S", 10.0),
            mcp_per_client=_int_env("CODERED_MCP_PER_CLIENT", three_quarters(mcp_cap)),
            mcp_call_timeout_s=_float_env("CODERED_MCP_CALL_TIMEOUT_S", 30.0),
            trusted_proxies=_proxies_env("CODERED_TRUSTED_PROXIES"),
            state_dir=_state_dir_env("CODERED_STATE_DIR"),
            shutdown_grace_s=_float_env("CODERED_SHUTDOWN_GRACE_S", 20.0),
            mcp_ttl_s=_float_env("CODERED_MCP_TTL_S", 1800.0),
            mcp_unused_ttl_s=_float_env("CODERED_MCP_UNUSED_TTL_S", 300.0),
            mcp_sessions_per_minute=_int_env("CODERED_MCP_SESSIONS_PER_MINUTE", 30),
            max_body_bytes=_int_env("CODERED_MAX_BODY_BYTES", 16 * KIB, minimum=1024),
            grader_max_body_bytes=_int_env("CODERED_GRADER_MAX_BODY_BYTES", 64 * KIB, minimum=1024),
            body_timeout_s=_float_env("CODERED_BODY_TIMEOUT_S", 10.0),
            header_timeout_s=_float_env("CODERED_HEADER_TIMEOUT_S", 10.0),
            max_connections=_int_env("CODERED_MAX_CONNECTIONS", 2048, minimum=8),
            heavy_jobs=_int_env("CODERED_HEAVY_JOBS", 1),
            heavy_queue=_int_env("CODERED_HEAVY_QUEUE", 8, minimum=0),
            heavy_wait_s=_float_env("CODERED_HEAVY_WAIT_S", 30.0),
            heavy_per_minute=_int_env("CODERED_HEAVY_PER_MINUTE", 30),
            console_per_minute=_int_env("CODERED_CONSOLE_PER_MINUTE", 300),
            allowed_origins=_origins_env("CODERED_ALLOWED_ORIGINS"),
            enable_llm_baseline=os.environ.get("CODERED_ENABLE_LLM_BASELINE", "") == "1",
            baseline_token=os.environ.get("CODERED_BASELINE_TOKEN", "").strip() or None,
        )
