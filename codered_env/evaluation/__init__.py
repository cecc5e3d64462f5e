"""Evaluation tooling: episode loop, SQLite store, reports and trajectory files.

* :mod:`codered_env.evaluation.episode` - the episode loop (in-process or remote environment)
* :mod:`codered_env.evaluation.evaluate` - ``run_evaluation`` behind ``codered eval``
* :mod:`codered_env.evaluation.store` - the SQLite episode store
* :mod:`codered_env.evaluation.report` - ``generate_report`` behind ``codered report``
* :mod:`codered_env.evaluation.trajectory` - the JSONL trajectory format and ``replay``
"""
