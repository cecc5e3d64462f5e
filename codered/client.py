"""``codered_env.client`` under the module path AutoEnv looks up (see ``codered/__init__.py``)."""

from codered_env.client import CoderedAction, CodeRedEnv, CoderedEnv, CoderedObservation
from codered_env.models import CodeRedAction, CodeRedObservation

__all__ = ["CodeRedAction", "CodeRedEnv", "CodeRedObservation", "CoderedAction", "CoderedEnv",
           "CoderedObservation"]
