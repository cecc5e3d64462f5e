"""``python -m codered_env.evaluation eval|report|replay`` (see commands.py)."""

from codered_env.evaluation.commands import app

app()
