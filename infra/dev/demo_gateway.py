"""The gateway act of `toolcat demo`: an agent calls PyPI's mcp-server-time through toolcat's MCP gateway.

examples/gateway.toolcat puts the server in a fresh catalog and grants one of its tools to an agent; the act
makes the agent a call token, starts `toolcat serve` on that home (a child process on a free loopback port,
stopped at the end) and connects the official MCP SDK's client to its `/mcp` as the agent: what it lists,
one call forwarded upstream, one refused, and the decision log that recorded both."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from domain.errors import UsageError

SERVER = "mcp-server-time"
AGENT, TOKEN = "agent:scheduler", "scheduler-bot"
CALLED = ("mcp.time.get_current_time", {"timezone": "UTC"})
REFUSED = ("mcp.time.convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"})
START_SECONDS = 60


def time_server() -> str | None:
    """The mcp-server-time installed beside toolcat (the demo extra's), else one on the PATH."""
    beside = Path(sys.executable).parent / SERVER
    return str(beside) if beside.exists() else shutil.which(SERVER)


def located(args: list[str], executable: str) -> list[str]:
    """An example line with `--command mcp-server-time` pointing at the installed executable (`make demo` runs
    the venv's toolcat without putting the venv on the PATH)."""
    return [executable if i and args[i - 1] == "--command" and arg == SERVER else arg for i, arg in enumerate(args)]


def served(home: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """`toolcat serve --port 0` on `home`, on the embedded default whatever the environment names; returns
    once its address file names it."""
    from infra.http.address import read_address
    log = home.parent / f"{home.name}-serve.log"
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLCAT_EVENT_STORE_URL", "TOOLCAT_KAFKA_BOOTSTRAP")}
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "infra.cli", "--home", str(home), "serve", "--port", "0"],
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env={**env, "TOOLCAT_HOME": str(home)})
    deadline = time.monotonic() + START_SECONDS
    while (address := read_address(home)) is None or address.pid != process.pid:
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise UsageError(f"demo step failed: toolcat serve did not start on {home} (see {log})")
        time.sleep(0.05)
    return process, address.url, log


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the server flushes its decision log on the way out), then a kill if it hangs."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def as_the_agent(url: str, token: str) -> dict[str, Any]:
    """What the agent sees through the gateway with the SDK's client over streamable HTTP."""
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client, \
            streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        answer = await session.call_tool(*CALLED)
        try:
            await session.call_tool(*REFUSED)
            refused: dict[str, Any] = {"error": None}
        except MCPError as error:
            refused = {"code": error.code, "message": error.message, "reason": (error.data or {}).get("reason")}
    return {"protocol_version": session.protocol_version,
            "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listed.tools],
            "call": {"name": CALLED[0], "arguments": CALLED[1],
                     "answer": answer.model_dump(mode="json", by_alias=True, exclude_none=True)},
            "refused": {"name": REFUSED[0], **refused}}


def gateway_act(demo: Any, home: Path) -> dict[str, Any]:
    """The act; `demo` is infra.dev.demo's Demo (its `build`, `toolcat`, `say`)."""
    import anyio
    executable = time_server()
    if executable is None:
        demo.say(f"\n({SERVER} is not installed: `make demo` installs it, or pip install 'toolcat[demo]'; the "
                 "gateway act is skipped)")
        return {"skipped": f"{SERVER} is not installed"}
    demo.heading("gateway: an agent calls mcp-server-time through toolcat's MCP gateway")
    built = demo.build("gateway", home, adapt=lambda args: located(args, executable))
    token = demo.toolcat(home, "token", "create", TOKEN, "--subject", AGENT, "--scope", "call", show=False)["token"]
    process, url, log = served(home)
    try:
        demo.say(f"token {TOKEN} bound to {AGENT} (scope call); toolcat serve answers MCP at {url}/mcp")
        seen = anyio.run(as_the_agent, url + "/mcp", token)
    except Exception as error:  # noqa: BLE001 - any failure of the act is the demo's, said with the server's log
        raise UsageError(f"demo step failed: the MCP client through the gateway: {error} (server log: {log})"
                         ) from error
    finally:
        stop(process)
    show(demo, seen)
    decisions = demo.sql(home, "The decision log: every call decided, allowed or not (SQL beside the history)",
                         "SELECT subject, token, asked, allowed, reason, set_position FROM gateway_decisions "
                         "ORDER BY decided_at")
    return {"catalog": built, "url": url + "/mcp", **seen, "decisions": decisions}


def show(demo: Any, seen: dict[str, Any]) -> None:
    """What the agent saw, readable."""
    demo.say(f"{AGENT} connects with the MCP SDK's client (protocol {seen['protocol_version']}); tools/list:")
    for tool in seen["tools"]:
        hints = ", ".join(k for k, v in sorted((tool.get("annotations") or {}).items()) if v is True)
        title = f" ({tool['title']})" if tool.get("title") else ""
        output = ", ".join((tool.get("outputSchema") or {}).get("properties") or {})
        demo.say(f"  {tool['name']}{title}: {tool.get('description') or ''}" + (f" [{hints}]" if hints else "")
                 + (f" → {{{output}}}" if output else ""))
    answer = seen["call"]["answer"]
    text = " ".join(c.get("text", "") for c in answer.get("content", []) if c.get("type") == "text")
    try:  # the time server answers JSON: one line of it
        text = json.dumps(json.loads(text))
    except ValueError:
        pass
    demo.say(f"tools/call {seen['call']['name']} {json.dumps(seen['call']['arguments'])} → {text}")
    demo.say(f"  _meta.toolcat: {json.dumps(answer.get('_meta', {}).get('toolcat'))}")
    refused = seen["refused"]
    demo.say(f"tools/call {refused['name']} → refused ({refused.get('code')}, {refused.get('reason')}): "
             f"{refused.get('message')}")
