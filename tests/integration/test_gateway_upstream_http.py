"""The gateway's upstream calls over streamable HTTP (infra/mcp/posted.py, pooled by
infra/mcp/gateway/upstream.py) against a real SDK server, tests/mcp_servers/faulty.py served over HTTP:
answers and progress pass through, an error names the server, a call that times out or that the caller
gives up is cancelled upstream too, and a server that lost the session or crashed is reached again."""
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from domain.mcp_servers import Connection
from infra.mcp.gateway.upstream import UpstreamPool
from infra.mcp.sessions import McpUnavailable
from infra.settings import Settings

FAULTY = Path(__file__).parents[1] / "mcp_servers" / "faulty.py"


@contextmanager
def faulty_over_http(tools: Path, stderr: Path, port: int = 0) -> Iterator[str]:
    """The faulty server over streamable HTTP (its stderr appended to `stderr`); its URL."""
    with open(stderr, "ab") as errors:
        process = subprocess.Popen([sys.executable, str(FAULTY), str(tools), "--http", str(port)],
                                   stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on "), f"faulty did not start: {stderr.read_text()}"
        yield line.split()[-1]
    finally:
        process.terminate()
        process.wait(30)


async def until_said(stderr: Path, line: str, times: int) -> None:
    with anyio.fail_after(20):
        while stderr.read_text().count(line) < times:
            await anyio.sleep(0.05)


def test_a_pooled_http_upstream_answers_tells_progress_and_cancels_and_fails_naming_the_server(
        tmp_path: Path) -> None:
    tools, stderr = tmp_path / "tools.json", tmp_path / "faulty.log"
    tools.write_text('[{"name": "echo", "inputSchema": {"type": "object"}}]')
    settings = Settings(mcp_request_seconds=1)

    async def story(url: str) -> str:
        connection = Connection(transport="http", url=url)
        async with anyio.create_task_group() as group:
            pool = UpstreamPool(settings, group)

            async def call(name: str, arguments: dict[str, Any], progress: Any = None) -> Any:
                opened = await pool.session("faulty", connection)
                return await opened.call(f"tools/call {name}", opened.session.call_tool(
                    name, arguments, progress_callback=progress))

            # an answer, with the progress the server sent on the way
            told: list[tuple[float, float | None, str | None]] = []

            async def heard(value: float, total: float | None, message: str | None) -> None:
                told.append((value, total, message))
            answer = await call("echo", {"message": "hello"}, heard)
            assert answer.content[0].text == "hello" and not answer.is_error
            assert told == [(1, 2, "step 1"), (2, 2, "step 2")]
            # the server's error answer names the server and says its words
            with pytest.raises(McpUnavailable, match="MCP server 'faulty'.*no tool nope"):
                await call("nope", {})
            # a call past TOOLCAT_MCP_REQUEST_SECONDS fails naming the server, and the server is told to stop
            with pytest.raises(McpUnavailable, match="MCP server 'faulty' did not answer tools/call slow within 1 s"):
                await call("slow", {})
            await until_said(stderr, "faulty: slow call cancelled", 1)
            # so is a call the caller gave up, and the pooled session goes on
            with anyio.move_on_after(0.3):
                await call("slow", {})
            await until_said(stderr, "faulty: slow call cancelled", 2)
            assert (await call("echo", {"message": "on"})).content[0].text == "on"
            # a crash mid-call fails naming the server
            with pytest.raises(McpUnavailable, match="MCP server 'faulty' failed during tools/call crash"):
                await call("crash", {})
            pool.close()
            group.cancel_scope.cancel()
        return url

    with faulty_over_http(tools, stderr) as url:
        anyio.run(story, url)


def test_a_restarted_http_upstream_is_reached_again_with_a_new_session(tmp_path: Path) -> None:
    tools, stderr = tmp_path / "tools.json", tmp_path / "faulty.log"
    tools.write_text('[{"name": "echo", "inputSchema": {"type": "object"}}]')
    with faulty_over_http(tools, stderr) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    connection = Connection(transport="http", url=url)

    async def story() -> None:
        async with anyio.create_task_group() as group:
            pool = UpstreamPool(Settings(mcp_request_seconds=5), group)

            async def call() -> Any:
                opened = await pool.session("faulty", connection)
                try:
                    return await opened.call("tools/call echo", opened.session.call_tool("echo", {"message": "hi"}))
                except McpUnavailable:
                    pool.broke("faulty", opened)  # as the gateway does
                    raise
            with faulty_over_http(tools, stderr, port):
                assert (await call()).content[0].text == "hi"
            # the server restarted meanwhile: the pooled session is unknown to it
            with faulty_over_http(tools, stderr, port):
                with pytest.raises(McpUnavailable, match="MCP server 'faulty' failed during tools/call echo"):
                    await call()
                assert (await call()).content[0].text == "hi"
            pool.close()
            group.cancel_scope.cancel()
    anyio.run(story)
