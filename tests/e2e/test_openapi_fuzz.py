"""End to end (issue 28, finding 10): a property-based fuzz of every operation of `toolcat serve`'s own OpenAPI
document with schemathesis, against a real server holding the example story: inputs that fit the document
and inputs that do not, each answer checked against the document (no 500; a status, a content type,
headers and a body it states; invalid input refused).
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.serving import Served, serving, tokens
from tests.support import SCRIPT, run_in_process

CHECKS = [status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
REJECTED = [negative_data_rejection]  # input the document does not allow is refused (4xx)
WAIT = 0.05  # the longest wait for a position the fuzz asks for (a wait is 503 after it, as documented)
# Few examples an operation (about 70 operations, two modes): the fuzz stays within a minute of the suite.
EXAMPLES = {GenerationMode.POSITIVE: 6, GenerationMode.NEGATIVE: 4}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str]]:
    """The example story, served with one token holding every scope."""
    home = tmp_path_factory.mktemp("fuzz") / "home"
    run_in_process(home, SCRIPT)
    key = tokens(home, admin="read,write,audit")["admin"]
    with serving(home) as server:
        yield server, key


def fuzz(server: Served, key: str, mode: GenerationMode) -> list[str]:
    """Every operation of the server's document fuzzed in `mode`; the failures found, one line each."""
    document = httpx.get(server.url + "/openapi.json", timeout=60).json()
    schema = schemathesis.openapi.from_dict(document)
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        parameters = document["paths"][operation.path][operation.method.lower()].get("parameters", [])
        if mode == GenerationMode.NEGATIVE and not parameters and "requestBody" not in operation.definition.raw:
            continue  # nothing to give that the document does not allow
        waits = any(parameter["name"] == "timeout" for parameter in parameters)

        @given(case=operation.as_strategy(mode))
        @settings(max_examples=EXAMPLES[mode], deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case: Any) -> None:
            timeout = (case.query or {}).get("timeout", WAIT + 1)
            if waits and isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > WAIT:
                case.query = {**(case.query or {}), "timeout": WAIT}
            response = case.call(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
            # 503 is an answer the document states (not caught up in time); 500 never is but for integrity
            assert response.status_code < 500 or response.status_code == 503, (
                f"{case.method} {case.formatted_path} {case.query}: {response.status_code} {response.text[:500]}")
            case.validate_response(response, checks=CHECKS + (REJECTED if mode == GenerationMode.NEGATIVE else []))

        try:
            check()
        except BaseException as failure:  # every failure of every operation is reported
            if isinstance(failure, KeyboardInterrupt):
                raise
            failures.append(f"{operation.label}: {str(failure)[:1500]}")
    return failures


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
def test_every_operation_answers_as_its_document_says(served: tuple[Served, str], mode: GenerationMode) -> None:
    server, key = served
    failures = fuzz(server, key, mode)
    assert not failures, "\n\n".join(failures)
