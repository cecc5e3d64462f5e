"""Property-based API testing of the project's own HTTP routes with schemathesis: whatever
the body (valid or not), no request gets a 500 and every response matches the published
OpenAPI schema.

Operations are driven explicitly (``APIOperation.as_strategy`` + hypothesis) rather than
through ``schemathesis.pytest.from_fixture``, whose lazy loader does not work with pytest 9.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from support_server import RunningServer

OWN_OPERATIONS = [
    ("POST", "/reset"),
    ("POST", "/step"),
    ("GET", "/state"),
    ("GET", "/tasks"),
    ("POST", "/grader"),
    ("POST", "/baseline"),
    ("GET", "/health"),
    ("GET", "/metadata"),
    ("GET", "/schema"),
    ("GET", "/"),
    ("GET", "/view"),
    ("GET", "/codered_env/splits"),
    ("POST", "/codered_env/task"),
    ("POST", "/codered_env/task_range"),
]
WITH_INPUT = [
    op for op in OWN_OPERATIONS
    if op[1] in ("/reset", "/step", "/state", "/grader", "/baseline", "/view", "/codered_env/task",
                 "/codered_env/task_range")
]
EXAMPLES = 60
# A valid /baseline body plays up to 5 tasks x its seeds (several CPU-seconds each): fewer examples
# still cover its schema, and each one costs as much as dozens of the other routes' examples.
EXAMPLES_OF = {("POST", "/baseline", GenerationMode.POSITIVE): 12}


@pytest.fixture(scope="module")
def api_schema(server: RunningServer) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(server.base_url + "/openapi.json")


def test_openapi_lists_every_own_operation(api_schema: schemathesis.BaseSchema) -> None:
    listed = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert set(OWN_OPERATIONS) <= listed


CASES = [(*op, GenerationMode.POSITIVE) for op in OWN_OPERATIONS] + [
    (*op, GenerationMode.NEGATIVE) for op in WITH_INPUT
]


@pytest.mark.parametrize(("method", "path", "mode"), CASES)
def test_own_routes_never_fail(
    api_schema: schemathesis.BaseSchema, method: str, path: str, mode: GenerationMode
) -> None:
    operation = api_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_OF.get((method, path, mode), EXAMPLES),
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def check(case: schemathesis.Case) -> None:
        response = case.call(timeout=60)
        if mode == GenerationMode.NEGATIVE and response.status_code == 413:
            return  # an invalid body over the route's size cap is rejected before it is parsed
        case.validate_response(response)

    check()
