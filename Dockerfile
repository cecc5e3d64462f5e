# CodeRedEnv OpenEnv server image.
# Runs as a non-root user and works with a read-only root filesystem: only /tmp needs to be
# writable, so HOME and every cache directory point there.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp \
    TMPDIR=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    XDG_CONFIG_HOME=/tmp/.config \
    XDG_DATA_HOME=/tmp/.local/share \
    MPLCONFIGDIR=/tmp/.cache/matplotlib \
    HF_HOME=/tmp/.cache/huggingface \
    UV_CACHE_DIR=/tmp/.cache/uv \
    GRADIO_TEMP_DIR=/tmp/.cache/gradio \
    GRADIO_ANALYTICS_ENABLED=False \
    HF_HUB_DISABLE_TELEMETRY=1 \
    HF_HUB_OFFLINE=1 \
    ENABLE_WEB_INTERFACE=false \
    MAX_CONCURRENT_ENVS=64 \
    PORT=8000

WORKDIR /app

# Dependencies are resolved from pyproject.toml and installed at build time (no lock file): the
# distribution openenv-codered (packages codered_env and its AutoEnv alias codered).
COPY pyproject.toml README.md openenv.yaml hatch_build.py ./
COPY codered_env ./codered_env
COPY codered ./codered
RUN pip install --no-cache-dir . \
    && useradd --uid 1000 --user-group --no-create-home --home-dir /tmp --shell /usr/sbin/nologin codered \
    && python -c "import codered_env.server.app"

USER 1000:1000

EXPOSE 8000

# File handles: every socket costs one. At startup the server raises its soft open-file limit
# to the hard limit and closes sockets beyond min(CODERED_MAX_CONNECTIONS, limit - 64) on accept,
# so idle clients cannot exhaust handles. Run with a high hard limit, e.g.
#   docker run --ulimit nofile=65536:65536 ...
# (with the common 1024 limit the server still works, capped at 960 sockets).
# All limits and timeouts: docs/SERVER.md, "Limits".

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4).status == 200 else 1)"]

CMD ["server", "--host", "0.0.0.0", "--port", "8000"]
