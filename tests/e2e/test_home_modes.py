"""End to end: every file the command line and the server make in a home is 0600 and the home 0700, under
a shell's usual umask 0o022 (issue 28, finding 9: `snapshot.duckdb` and `events.sqlite` were 0644)."""
from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from tests.serving import serving
from tests.support import ok, run_toolcat, toolcat_env


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    """The umask the processes started in the block inherit, as a shell would give them."""
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


def loose_modes(home: Path) -> dict[str, str]:
    """Every path in the home (the home too) whose mode lets anyone but the owner in: path → mode."""
    found = {}
    for path in [home, *home.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        wanted = 0o700 if path.is_dir() else 0o600
        if mode != wanted and not path.is_symlink():
            found[str(path.relative_to(home.parent))] = oct(mode)
    return found


def toolcat(home: Path, *args: str) -> dict[str, object]:
    return ok(run_toolcat(*args, env=toolcat_env("t", {"TOOLCAT_HOME": str(home)}), timeout=120))


def test_every_file_the_cli_and_the_server_make_is_the_owners_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with umask(0o022):
        # Given a home made by the command line
        toolcat(home, "init")
        toolcat(home, "unit", "create", "eng")
        admin = toolcat(home, "token", "create", "admin", "--scope", "read,write,audit")["token"]
        assert loose_modes(home) == {}
        # When a server serves it, is written to, publishes its snapshot and records its address
        with serving(home) as served, served.client(str(admin)) as client:
            assert client.post("/v1/agent/create", json={"agent": "triage", "unit": "eng"}).status_code == 200
            assert client.post("/v1/snapshot").status_code == 200
            assert client.get("/v1/subjects/agent:triage/effective").status_code == 200
            assert (home / "snapshot.duckdb").exists() and (home / "serve.json").exists()
            # Then every file is 0600 and every directory 0700, while it runs
            assert loose_modes(home) == {}
        # And after it stopped (it writes when tokens were last used), and after a rebuild
        assert (home / "tokens-used.json").exists()
        toolcat(home, "rebuild")
        assert loose_modes(home) == {}


def test_a_home_left_open_by_an_older_toolcat_is_closed_by_the_next_command(tmp_path: Path) -> None:
    home = tmp_path / "home"
    toolcat(home, "init")
    home.chmod(0o755)
    toolcat(home, "tool", "list")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    # A --home that is no toolcat home (yet) keeps its mode until toolcat's files are in it
    other = tmp_path / "elsewhere"
    other.mkdir(mode=0o755)
    other.chmod(0o755)
    assert run_toolcat("token", "revoke", "nobody", env=toolcat_env("t", {"TOOLCAT_HOME": str(other)}),
                       timeout=60).code == 2
    assert stat.S_IMODE(other.stat().st_mode) == 0o755
