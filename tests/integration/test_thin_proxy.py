"""The gateway bench's reference (infra/dev/thin_proxy.py): the thinnest proxy on the SDK must really pass
listings and calls through to its upstream, or the bench would compare the gateway with nothing."""
from __future__ import annotations

import anyio

from infra.dev.bench_gateway import Endpoint, Sizes, call_figures, echo_upstream, listed, mcp_client, thin_proxy_of


def test_the_thin_proxy_lists_and_calls_its_upstreams_tools() -> None:
    # Given the echo server with three tools, and the thin proxy in front of it
    pids: list[int] = []
    with echo_upstream(3, pids) as upstream, thin_proxy_of(upstream, pids) as proxy:
        async def story() -> None:
            async with mcp_client(Endpoint(proxy, "echo")) as session:
                # When an agent lists and calls through the proxy
                names = [tool.name for tool in await listed(session)]
                answer = await session.call_tool("echo-00002", {"text": "through the proxy"})
            # Then it sees the upstream's tools as they are, and the upstream's answer
            assert names == ["echo", "echo-00001", "echo-00002"]
            assert not answer.is_error and answer.content[0].text == "through the proxy"
        anyio.run(story)
        # And the bench's figures name the proxy as the middle path, each with its CPU per call
        figures = call_figures(Endpoint(upstream, "echo"), Endpoint(proxy, "echo"),
                               Sizes(calls=5, seconds=0.3), pids[1], pids[0], via="proxy")
    assert figures["call_latency"]["proxy"]["samples"] == 5
    assert figures["throughput"]["proxy_calls_per_s"] > 0 and figures["throughput"]["proxy_cpu_ms_per_call"] > 0
