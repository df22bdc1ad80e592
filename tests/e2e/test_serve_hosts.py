"""The sites `toolcat serve` answers: a request whose Host or Origin names another site (DNS rebinding: an
attacker's name resolving to 127.0.0.1, reached through an operator's browser) is refused with 421 before
anything is read, on the API, the web page and the MCP gateway alike; names the operator lists are served;
links never repeat the request's Host."""
from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.doc_text import code_blocks, section
from tests.serving import Served, serving, tokens
from tests.support import SCRIPT, run_in_process

DEPRECATED = "mcp.memory.write"  # the bundled story's deprecated alias of memory.write


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("hosts") / "home"
    run_in_process(home, SCRIPT)
    with serving(home, "--allowed-host", "catalog.internal", "--public-url", "https://catalog.example") as server:
        yield server


def refused(response: httpx.Response, header: str) -> None:
    assert response.status_code == 421, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == "misdirected" and header in problem["details"], problem


def test_a_rebinding_host_gets_no_data_from_sql_pages_or_the_gateway(served: Served) -> None:
    # given an anonymous loopback client (no tokens: reads are open to loopback) whose Host is another site
    with served.client(headers={"Host": "rebind.attacker.example:8751"}) as rebound:
        # when it asks for data, the page, the MCP endpoint, then each is refused with 421 and nothing else
        answer = rebound.post("/v1/sql", json={"query": "SELECT count(*) AS n FROM events"})
        refused(answer, "host")
        assert "rows" not in answer.json() and set(answer.json()) >= {"code", "detail"}
        refused(rebound.get("/"), "host")
        refused(rebound.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize"}), "host")
    # while the same request by a loopback name is answered
    with served.client() as local:
        assert local.post("/v1/sql", json={"query": "SELECT count(*) AS n FROM events"}).json()[0]["n"] > 50


def test_a_page_of_another_site_is_refused_even_with_a_loopback_host(served: Served) -> None:
    with served.client(headers={"Origin": "http://evil.example"}) as cross_site:
        refused(cross_site.post("/v1/sql", json={"query": "SELECT 1 AS one"}), "origin")
    with served.client(headers={"Origin": "http://localhost:3000"}) as own:
        assert own.post("/v1/sql", json={"query": "SELECT 1 AS one"}).json() == [{"one": 1}]


def test_a_listed_name_is_served(served: Served) -> None:
    with served.client(headers={"Host": "catalog.internal:8750", "Origin": "https://catalog.internal"}) as listed:
        assert listed.get("/v1/health").status_code == 200


def test_links_come_from_the_public_url_never_from_the_request(served: Served) -> None:
    with served.client(headers={"Host": "catalog.internal"}) as client:
        link = client.get(f"/v1/tools/{DEPRECATED}").headers["Link"]
    assert link == '<https://catalog.example/v1/tools/memory.write>; rel="successor-version"'
    with served.client(headers={"Host": "evil.example:666"}) as evil:
        answer = evil.get(f"/v1/tools/{DEPRECATED}")
    assert answer.status_code == 421 and "evil.example" not in answer.headers.get("Link", "")


def test_the_command_security_md_shows_serves_the_name_it_lists(tmp_path: Path) -> None:
    # given the command docs/security.md shows (on any free port), in a home with a token (not loopback)
    [shown] = code_blocks(section("docs/security.md", "## Which sites the server answers"), "sh")
    argv = shlex.split(shown)
    assert argv[:2] == ["toolcat", "serve"]
    home = tmp_path / "home"
    run_in_process(home, [["init"]])
    key = tokens(home, reader="read")["reader"]
    # (waited for under the listed name: the plain address's name is not one this server answers)
    with serving(home, *argv[2:], ready=False) as server:
        # then the listed name is served, with links under the public URL, and another name is refused
        with server.client(key, headers={"Host": "catalog.internal"}) as listed:
            deadline = time.monotonic() + 60
            while listed.get("/v1/ready").status_code == 503 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert listed.get("/v1/tools").status_code == 200
        with server.client(key, headers={"Host": "other.internal"}) as other:
            assert other.get("/v1/tools").status_code == 421
