"""The red team: cheap, degenerate and exploitative policies that probe whether the score can be
raised while patients fare worse (``policies.py``), and the probe that measures it (``probe.py``).

Only the public API of ``codered_env`` is used, so the probe runs against any checkout of the
project: ``cd OTHER_CHECKOUT && uv run python PATH/TO/bench/redteam/probe.py --help``.
"""
