"""CodeRedEnv as a tool environment for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL builds one ``CodeRedToolEnv`` per rollout, calls ``reset(**row)`` with the dataset row (its
string is appended to the prompt), exposes every public method except ``reset``/``get_reward`` as
a tool (schema from the type hints and the Google-style docstring; here one generated method per
catalogue action plus ``view_full_state``), and scores the rollout with ``get_reward()``. This
module does not import TRL: the class is plain Python over ``CodeRedSim`` or, with ``base_url``,
over a CodeRedEnv server's WebSocket.

Tool replies are compact: the clock, the reward of the decision, a refusal if any, the events
since the last decision, and only the lines of the state that changed (time counters such as
minutes-since-call, ETAs and displayed vitals do not count as a change; vitals bands are in the
events). ``view_full_state`` returns the whole text observation whenever the model wants it.

Usage (examples/grpo_codered.py runs it on a CPU with a local model; docs/TRAINING.md)::

    from trl import GRPOConfig, GRPOTrainer
    from codered_env.trl import CodeRedToolEnv, episode_dataset

    trainer = GRPOTrainer(model=model, processing_class=tokenizer,
                          train_dataset=Dataset.from_list(episode_dataset(["task1"], range(200))),
                          environment_factory=CodeRedToolEnv, args=GRPOConfig(...))
    # on a server: environment_factory=functools.partial(CodeRedToolEnv, base_url="http://host:8000")
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterable, Iterator
from typing import Any

from ..city_choice import DEFAULT_CITY, city_key
from ..sim import TASK_IDS, TASKS, CodeRedSim
from ..sim.citygen import resolve_city
from ..sim.render_lines import INLINE_SECTIONS, SECTIONS, render_lines
from .episodes import Episode, LocalEpisode, RemoteEpisode, View
from .tools import add_action_tools

SYSTEM_PROMPT = (
    "You coordinate emergency medical services in a city: dispatch ambulances, triage calls, choose "
    "hospitals, prepare operating rooms, page specialists, manage blood and mutual aid. Every tool call "
    "is one decision and costs one simulated minute (maintain_plan waits for the next event). Use the "
    "ids shown in the state. The episode ends when everyone is cared for, at the time horizon or when "
    "the decision budget is spent; you are scored on patient outcomes and resource use."
)

# Minute counters that change every step without anything happening; not a "change" for replies
# (matched in a line's text, whose structure comes from the observation's keyed lines).
_TICKING = re.compile(
    r"\d+m since call|waiting \d+m|eta \d+m|\d+m left|HR\d+ BP\d+ SpO2 \d+ GCS\d+ v[\d.]+"
)


def episode_dataset(
    task_ids: Iterable[str] = TASK_IDS, seeds: Iterable[int] = range(100),
    cities: Iterable[str | int] = (DEFAULT_CITY,),
) -> list[dict[str, Any]]:
    """Rows ``{"prompt": [...], "task_id": t, "seed": s}`` for every task, city and seed, for a TRL
    dataset (``datasets.Dataset.from_list(episode_dataset(...))``); ``reset(**row)`` starts that
    episode. A row of a generated city also has ``"city": "gen-<seed>"``; with several cities, use
    a tool environment whose tools do not enumerate one city's ids (``city_tool_env(None)``)."""
    chosen = [city_key(c) for c in cities]
    rows = []
    for task_id in task_ids:
        if task_id not in TASKS:
            raise ValueError(f"unknown task_id {task_id!r}; valid: {', '.join(TASK_IDS)}")
        brief = f"{TASKS[task_id].name}: {TASKS[task_id].description}\n"
        for city in chosen:
            for seed in seeds:
                prompt = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": brief}]
                row = {"prompt": prompt, "task_id": task_id, "seed": int(seed)}
                rows.append(row if city == DEFAULT_CITY else {**row, "city": city})
    return rows


def iter_episode_rows(task_ids: Iterable[str] = TASK_IDS, start_seed: int = 0) -> Iterator[dict[str, Any]]:
    """An endless stream of rows (seeds ``start_seed``, ``start_seed + 1``, ... per task in turn)."""
    seed = start_seed
    tasks = list(task_ids)
    while True:
        yield from episode_dataset(tasks, [seed])
        seed += 1


# Lines a reply never repeats as a change: the clock (the reply's head says it), the error and
# the events (the reply shows them itself).
_NOT_STATE = frozenset({"clock", "error", "events"})


def keyed_lines(observation: dict[str, Any]) -> dict[str, str]:
    """The observation's state as {key: line} from ``render_lines``: one key per call, patient,
    unit and hospital (its id; a unit's line starts with ``UNIT``) and per section head (the
    section's name). Unit ids are shown inside the units head, which is left out."""
    return reply_lines(observation)[1]


def reply_lines(observation: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The observation's events line (if any) and its :func:`keyed_lines`, from one rendering."""
    events: list[str] = []
    out: dict[str, str] = {}
    for line in render_lines(observation):
        if line.section == "events":
            events.append(line.text)
        if line.section in _NOT_STATE:
            continue
        if line.section in INLINE_SECTIONS:
            if line.key is not None:
                out[line.key] = f"UNIT {line.text}"
            continue
        out[line.key if line.key is not None else line.section] = line.text
    return events, out


@add_action_tools
class CodeRedToolEnv:
    """One CodeRedEnv episode driven by tool calls (for ``GRPOTrainer(environment_factory=...)``).

    ``reset(task_id=..., seed=...)`` starts the episode and returns its full state text; each tool
    (one per catalogue action, generated by ``tools.add_action_tools``) is one decision and returns
    what changed; ``get_reward()`` is the final grade in [0.01, 0.99] (if the model stops calling
    tools early, the world plays on without decisions, then is graded). Invalid calls never raise:
    the reply says what was wrong and what is valid, as the simulation does, and the decision still
    costs its minute.

    Without ``base_url`` the episode runs in this process. With ``base_url="http://host:8000"`` it
    runs on that CodeRedEnv server over one WebSocket session per episode (same replies and
    rewards), closed when the episode's reward is taken, at the next reset, on leaving a ``with``
    block, or when the instance is garbage collected. TRL calls the factory with no arguments:
    ``environment_factory=functools.partial(CodeRedToolEnv, base_url=...)``. One difference is
    imposed by the server's protocol: a call whose arguments break the wire schema (a value outside
    an enumeration, a count out of range) is refused before it reaches the server, so no minute
    passes, where the in-process simulation counts it as an invalid decision.
    """

    def __init__(self, task_id: str = "task1", seed: int = 0, base_url: str | None = None,
                 city: str | int = DEFAULT_CITY) -> None:
        self.base_url = base_url
        self._task_id, self._seed, self._city = task_id, seed, city_key(city)
        self._episode: Episode | None = None
        self._shown: dict[str, str] = {}
        self.rewards: list[float] = []
        self.tool_calls = 0
        self.refused_calls = 0
        if base_url is None:
            self._episode = LocalEpisode(task_id, seed, self._city)

    @property
    def sim(self) -> CodeRedSim:
        """The in-process simulation (AttributeError for a remote episode)."""
        if not isinstance(self._episode, LocalEpisode):
            raise AttributeError("a remote CodeRedToolEnv has no local simulation")
        return self._episode.sim

    # ------------------------------------------------------------------ TRL contract
    def reset(self, task_id: str | None = None, seed: int | None = None, city: str | int | None = None,
              **row: Any) -> str:
        """Start the episode of a dataset row (extra columns such as ``prompt`` are ignored);
        ``city`` as ``codered_env.city_choice.city_key`` takes it (default: the constructor's)."""
        chosen = (task_id if task_id is not None else self._task_id, _seed_of(seed),
                  city_key(city) if city is not None else self._city)
        episode = self._open(*chosen)  # bad input raises here, with the current episode kept
        self._release()
        (self._task_id, self._seed, self._city), self._episode = chosen, episode
        self.rewards = []
        self.tool_calls = self.refused_calls = 0
        view = self._episode.view
        self._shown = keyed_lines(view.observation)
        return "\n" + view.text

    def get_reward(self) -> float:
        """The episode's final grade (finishing the episode first if the model stopped early)."""
        episode = self._started()
        reward = episode.finish()
        if self.base_url is not None:
            self._release()  # the remote session is released as soon as its grade is known
        return reward

    def __enter__(self) -> CodeRedToolEnv:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._release()

    def _release(self) -> None:
        """Close the remote session, if any (idempotent). Not a public method: TRL would make it a tool."""
        if isinstance(self._episode, RemoteEpisode):
            self._episode.close()

    def view_full_state(self) -> str:
        """Show the whole current state (all patients, calls, units, hospitals, roads, legal actions).

        This is not a decision: no time passes.

        Returns:
            The full state text.
        """
        view = self._started().view
        self._shown = keyed_lines(view.observation)
        return view.text

    # ------------------------------------------------------------------ helpers
    def _open(self, task_id: str, seed: int, city: str) -> Episode:
        if self.base_url is None:
            return LocalEpisode(task_id, seed, city)
        return RemoteEpisode(self.base_url, task_id, seed, city=city)

    def _started(self) -> Episode:
        if self._episode is None:
            raise RuntimeError("no episode: call reset(task_id=..., seed=...) first")
        return self._episode

    def _act(self, **action: Any) -> str:
        episode = self._started()
        if episode.view.done:
            return f"The episode is over (final grade {episode.view.score_preview:.3f}); no more decisions."
        outcome = episode.step(action)
        self.rewards.append(outcome.reward)
        self.tool_calls += 1
        self.refused_calls += outcome.error is not None
        return self._reply(outcome.reward, outcome.error, outcome.view)

    def _reply(self, reward: float, error: str | None, view: View) -> str:
        head = (f"t={view.clock_min}/{view.horizon_min} step {view.step}/{view.max_steps} "
                f"score {view.score_preview:.3f} ({reward:+.3f})")
        lines = [head + (" | DONE" if view.done else "")]
        if error:
            lines.append(f"REFUSED: {error}")
        if view.events:
            lines.append("EVENTS: " + "; ".join(view.events))
        now = keyed_lines(view.observation)
        for key, line in now.items():
            old = self._shown.get(key)
            if old is None or _TICKING.sub("", old) != _TICKING.sub("", line):
                lines.append(line)
        gone = [k for k in self._shown if k not in now and k not in SECTIONS]
        if gone:
            lines.append("GONE: " + ", ".join(gone))
        if view.done:
            reason = self._started().end_reason()
            lines.append(f"EPISODE OVER ({reason}): final grade {view.score_preview:.3f}")
        self._shown = now
        return "\n".join(lines)


def _seed_of(seed: Any) -> int:
    """A dataset row's seed as an integer (None: 0): an integer, its digits or a whole float."""
    if seed is None:
        return 0
    if isinstance(seed, str) and seed.strip().isdigit():
        return int(seed)
    if isinstance(seed, float) and seed.is_integer():
        return int(seed)
    if isinstance(seed, bool) or not hasattr(type(seed), "__index__"):
        raise ValueError(f"seed must be a non-negative integer, not {seed!r:.60}")
    return operator.index(seed)


def city_tool_env(city: str | int | None) -> type[CodeRedToolEnv]:
    """A ``CodeRedToolEnv`` class for episodes in ``city`` (its default city), whose tools
    enumerate that city's hospitals, units, rooms and nodes; ``None``: tools with plain string
    ids (for a dataset over many cities: ``reset`` then takes each row's ``city``). TRL builds
    the tool schema once per class, so one class serves one city, or every city without enums."""
    key = None if city is None else city_key(city)
    chosen = None if key is None else resolve_city(key)

    def __init__(self: CodeRedToolEnv, task_id: str = "task1", seed: int = 0,
                 base_url: str | None = None, city: str | int = key or DEFAULT_CITY) -> None:
        CodeRedToolEnv.__init__(self, task_id, seed, base_url, city)

    name = f"CodeRedToolEnv_{(key or 'any_city').replace('-', '_')}"
    cls = type(name, (CodeRedToolEnv,), {"__doc__": CodeRedToolEnv.__doc__, "__init__": __init__})
    return add_action_tools(cls, chosen)
