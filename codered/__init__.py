"""The import name OpenEnv's AutoEnv derives from the distribution ``openenv-codered``.

AutoEnv maps an installed ``openenv-<name>`` distribution to the module ``<name>`` and imports
its client from ``<name>.client``; the package itself is ``codered_env``. This module only
points there (``codered.client`` re-exports ``codered_env.client``); import ``codered_env``.
"""
