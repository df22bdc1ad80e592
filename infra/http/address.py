"""Where a home's server listens: `serve.json` in the home, written once the socket is bound and removed
on exit. A file left behind by a server that died is stale: its process is gone or its port is closed."""
from __future__ import annotations

import contextlib
import json
import os
import socket
from pathlib import Path

from pydantic import BaseModel

ADDRESS_FILE = "serve.json"


class ServerAddress(BaseModel):
    pid: int
    host: str
    port: int
    # A read-only token for this home's own command line; the file is readable by its owner only.
    token: str

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def address_path(home: Path) -> Path:
    return home / ADDRESS_FILE


def record_address(home: Path, address: ServerAddress) -> None:
    """Write the address atomically, readable by the home's owner only (it holds a token)."""
    home.mkdir(parents=True, exist_ok=True)
    staging = address_path(home).with_suffix(".tmp")
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(address.model_dump_json())
    os.replace(staging, address_path(home))


def forget_address(home: Path, pid: int) -> None:
    """Remove the address file if it is still this process's."""
    recorded = read_address(home)
    if recorded is not None and recorded.pid == pid:
        address_path(home).unlink(missing_ok=True)


def read_address(home: Path) -> ServerAddress | None:
    try:
        return ServerAddress.model_validate(json.loads(address_path(home).read_text()))
    except (OSError, ValueError):
        return None


def live_address(home: Path) -> ServerAddress | None:
    """The address of the server running on this home, or None (no file, or a stale one)."""
    address = read_address(home)
    if address is None or not _process_alive(address.pid) or not _port_open(address):
        return None
    return address


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _port_open(address: ServerAddress) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((address.host, address.port), timeout=1.0):
        return True
    return False
