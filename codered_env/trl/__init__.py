"""CodeRedEnv for TRL: a tool environment for ``GRPOTrainer(environment_factory=...)`` (in-process or
over a server's WebSocket) and local, download-free model loading for CPU runs."""

from .env import CodeRedToolEnv, city_tool_env, episode_dataset, iter_episode_rows

__all__ = ["CodeRedToolEnv", "city_tool_env", "episode_dataset", "iter_episode_rows"]
