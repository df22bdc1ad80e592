"""A real `toolcat serve` process on a free loopback port, for the tests: started on a home, found by the
address file it records, stopped with SIGTERM (which must end it with exit 0)."""
from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from infra.http.address import read_address
from infra.http.auth import create_token
from tests.support import TOOLCAT, toolcat_env


@dataclass
class Served:
    process: subprocess.Popen[str]
    home: Path
    url: str
    log: Path

    def client(self, token: str | None = None, headers: dict[str, str] | None = None,
               **options: Any) -> httpx.Client:
        sent = ({"Authorization": f"Bearer {token}"} if token else {}) | (headers or {})
        return httpx.Client(base_url=self.url, headers=sent, **{"timeout": 60, **options})

    def stop(self, timeout: float = 90) -> int:
        """SIGTERM, then the exit code (a hang fails the test)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"the server did not stop within {timeout}s:\n{self.log.read_text()}") from None


def start_server(home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60,
                 ready: bool = True) -> Served:
    """`toolcat serve --port 0 ARGS` on `home`; returns once it listens (its address file names it) and,
    with `ready`, once caught up with the store (/v1/ready 200: until then reads are refused with 503)."""
    home.mkdir(parents=True, exist_ok=True)
    log = home.parent / f"serve-{time.monotonic_ns()}.log"
    with log.open("w") as out:
        process = subprocess.Popen([TOOLCAT, "serve", "--port", "0", *args], stdout=out, stderr=subprocess.STDOUT,
                                   text=True, env=toolcat_env("serve", {"TOOLCAT_HOME": str(home)}, env))
    deadline = time.monotonic() + timeout
    while (address := read_address(home)) is None or address.pid != process.pid:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"toolcat serve did not start (exit {process.poll()}):\n{log.read_text()}")
        time.sleep(0.05)
    served = Served(process, home, address.url, log)
    if ready:
        _wait_until_ready(served, deadline)
    return served


def _wait_until_ready(served: Served, deadline: float) -> None:
    with served.client() as client:
        while client.get("/v1/ready").status_code != 200:
            if served.process.poll() is not None or time.monotonic() > deadline:
                served.process.kill()
                raise AssertionError(f"toolcat serve did not catch up (exit {served.process.poll()}):\n"
                                     f"{served.log.read_text()}")
            time.sleep(0.05)


@contextlib.contextmanager
def serving(home: Path, *args: str, env: dict[str, str] | None = None, ready: bool = True) -> Iterator[Served]:
    """A server for the block (`ready`: as start_server); it must stop cleanly (exit 0) and remove its
    address file."""
    served = start_server(home, *args, env=env, ready=ready)
    try:
        yield served
    finally:
        code = served.stop()
        assert code == 0, f"toolcat serve exited {code}:\n{served.log.read_text()}"
        assert read_address(home) is None


def tokens(home: Path, **scopes: str) -> dict[str, str]:
    """Tokens by name, e.g. tokens(home, admin="read,write,audit")."""
    return {name: create_token(home, name, scope.split(",")) for name, scope in scopes.items()}


@contextlib.contextmanager
def admin_client(home: Path) -> Iterator[httpx.Client]:
    """A client of a server started on `home` (made here) with a read, write and audit token."""
    home.mkdir()
    keys = tokens(home, admin="read,write,audit")
    with serving(home) as served, served.client(keys["admin"]) as client:
        yield client


def posted(client: httpx.Client, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    """A POST's JSON answer, once its status is the one expected."""
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


@contextlib.contextmanager
def following_state(settings: Any) -> Iterator[Any]:
    """The server's owner of the read model, in this process, following the store every 50 ms, once caught up
    at start (until then it refuses reads); stopped after."""
    from infra.http.metrics import ServerMetrics
    from infra.http.state import ServerState
    server = ServerState(settings.model_copy(update={"follow_poll_seconds": 0.05}), "store", ServerMetrics())
    server.start()
    try:
        assert server.caught_up.wait(60), f"the server's state did not catch up: {server.failure}"
        yield server
    finally:
        server.stop()
