"""The server and the client import none of OpenEnv's heavy package initialisers
(codered_env/openenv_lazy.py), and OpenEnv's package re-exports still work when asked for."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("gradio", "fastmcp", "openai", "pandas")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_server_app_imports_no_ui_stack() -> None:
    loaded = _run(
        "import sys, codered_env.server.app\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    assert loaded == ""


def test_client_imports_no_ui_stack() -> None:
    loaded = _run(
        "import sys\nfrom codered_env import CodeRedEnv\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    assert loaded == ""


def test_package_reexports_load_on_demand() -> None:
    out = _run(
        "import codered_env.server.app\n"
        "from openenv.core import EnvClient, GenericEnvClient\n"
        "from openenv.core.rubrics import Rubric, LLMJudge\n"
        "import openenv.core.env_server as es\n"
        "from openenv.core.env_server.types import Action\n"
        "print(EnvClient.__name__, Rubric.__name__, es.Action is Action, es.HTTPEnvServer.__name__)"
    )
    assert out == "EnvClient Rubric True HTTPEnvServer"


def test_unknown_attribute_still_raises() -> None:
    out = _run(
        "import codered_env.models, openenv.core as core\n"
        "try:\n    core.no_such_name\nexcept AttributeError:\n    print('raised')"
    )
    assert out == "raised"
