"""Names vulture cannot see being used: framework hooks and data read by name.

``.ci/run`` runs ``vulture`` on the code, tests and scripts with this file; anything it reports
that is not listed here is dead code (delete it) or a new framework hook (add it here, grouped,
with the reason). Generated with ``vulture ... --make-whitelist`` and sorted by reason.
"""
# ruff: noqa

# Framework hooks: OpenEnv client hooks, module __getattr__/__dir__, Gymnasium's action_space,
# stable-baselines3's callback, OpenEnv's SUPPORTS_CONCURRENT_SESSIONS, FastAPI app.state, sqlite3 row_factory.
__getattr__  # unused function (codered_env/__init__.py:18)
__dir__  # unused function (codered_env/__init__.py:27)
_._step_payload  # unused method (codered_env/client.py:31)
_._parse_result  # unused method (codered_env/client.py:36)
_._parse_state  # unused method (codered_env/client.py:49)
_.row_factory  # unused attribute (codered_env/evaluation/store.py:141)
_.action_space  # unused attribute (codered_env/gym_env.py:955)
_.ws_sessions  # unused attribute (codered_env/server/app.py:87)
_.http_sessions  # unused attribute (codered_env/server/app.py:96)
SUPPORTS_CONCURRENT_SESSIONS  # unused variable (codered_env/server/environment.py:93)
_._on_step  # unused method (codered_env/train.py:204)
_._on_rollout_start  # unused method (codered_env/train.py:224)

# pydantic: model_config and fields that exist to be validated and serialised.
model_config  # unused variable (codered_env/models.py:84)
clock_min  # unused variable (codered_env/models.py:127)
model_config  # unused variable (codered_env/models.py:148)
eta_min  # unused variable (codered_env/models.py:180)
blood_reserved  # unused variable (codered_env/models.py:182)
minutes_since_call  # unused variable (codered_env/models.py:185)
minutes_since_onset  # unused variable (codered_env/models.py:186)
treatment_start_min  # unused variable (codered_env/models.py:187)
next_node  # unused variable (codered_env/models.py:196)
eta_min  # unused variable (codered_env/models.py:198)
busy_min  # unused variable (codered_env/models.py:199)
icu_free  # unused variable (codered_env/models.py:230)
received_min  # unused variable (codered_env/models.py:238)
waiting_min  # unused variable (codered_env/models.py:239)
arrives_min  # unused variable (codered_env/models.py:267)
minutes_left  # unused variable (codered_env/models.py:283)
clock_min  # unused variable (codered_env/models.py:311)
model_config  # unused variable (codered_env/server/schemas.py:34)
model_config  # unused variable (codered_env/server/schemas.py:101)
model_config  # unused variable (codered_env/server/web_routes.py:52)
model_config  # unused variable (codered_env/sim/actions.py:25)

# Data read by name (asdict / stats dicts / JSON), never as an attribute in our code.
_.failed_calls  # unused attribute (codered_env/agents/llm/client.py)
_.tool_answers  # unused attribute (codered_env/agents/llm/agent.py)
_.text_answers  # unused attribute (codered_env/agents/llm/agent.py)
note  # unused variable (codered_env/agents/roster.py:25)
_.waited_s  # unused attribute (codered_env/evaluation/ratelimit.py:72)
_.waited_s  # unused attribute (codered_env/evaluation/ratelimit.py:89)
agent_errors  # unused variable (codered_env/evaluation/store.py:106)

# Test and benchmark doubles: methods and attributes the stubbed library calls or reads.
max_us  # unused variable (bench/bench_sim.py:86)
_.create_completion  # unused method (bench/llm_prompt_tokens.py:36)
SUPPORTS_CONCURRENT_SESSIONS  # unused variable (bench/trivial_env.py:30)
_.daemon_threads  # unused attribute (tests/evaluation/fake_endpoint.py:47)
_.log_message  # unused method (tests/evaluation/fake_endpoint.py:89)
_.do_POST  # unused method (tests/evaluation/fake_endpoint.py:102)
_.should_exit  # unused attribute (tests/inference/fake_openai.py:155)
pytest_runtest_setup  # unused function (tests/server/conftest.py:29)
pytest_collection_modifyitems  # unused function (tests/conftest.py), a pytest hook
pytestmark  # unused variable (tests/server/test_server_validation.py:23)
max_bytes  # unused variable (tests/server/test_server_validation.py:43)
_.exec  # unused method (tests/server/test_server_validation.py:46)
capabilities  # unused variable (tests/server/test_server_validation.py:57)
supported_network_modes  # unused variable (tests/server/test_server_validation.py:58)
_.pre_tokenizer  # unused attribute (tests/training/test_trl_env.py:82)
_.chat_template  # unused attribute (tests/training/test_trl_env.py:88)

# pytest fixtures requested as arguments only for their effect.
checkpoint_agents  # unused variable (tests/evaluation/test_provenance.py:73)

# OpenEnv: AutoEnv infers these class names from the package name (client.py aliases); Rubric.forward is
# the rubric hook OpenEnv calls.
CoderedEnv  # unused variable (codered_env/client.py)
CoderedAction  # unused variable (codered_env/client.py)
CoderedObservation  # unused variable (codered_env/client.py)
_.forward  # unused method (codered_env/server/rubric_tree.py)

# transformers / TRL / inspect: the tokenizer's padding side, a generated method's signature (read by
# inspect.signature and TRL's schema extraction), a TrainerCallback hook.
_.padding_side  # unused attribute (codered_env/trl/local_models.py)
_.__signature__  # unused attribute (codered_env/trl/tools.py)
_.on_log  # unused method (examples/grpo_codered.py)

# Server restarts and shutdown: OpenEnv client hook, importlib loader hooks and module
# attributes set for the import system, the sweep task kept on app.state, sqlite3's setting.
_._send_and_receive  # unused method (codered_env/client.py)
_._ws_loop  # unused attribute (codered_env/client.py)
_.__class__  # unused attribute (codered_env/openenv_lazy.py)
_.__loader__  # unused attribute (codered_env/openenv_lazy.py)
_.create_module  # unused method (codered_env/openenv_lazy.py)
_.sweeper  # unused attribute (codered_env/server/app.py)
_.isolation_level  # unused attribute (codered_env/server/journal.py)
_.lease_ticker  # unused attribute (codered_env/server/app.py)

# pydantic calls the observation's wrap serializer (codered_env/models.py).
_._without_absent_city  # unused method (codered_env/models.py)
