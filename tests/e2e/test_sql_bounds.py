"""User SQL cannot take the server down (issue 28, finding 1): on a real `toolcat serve`, a query that
builds a huge value and one DuckDB never interrupts end as `sql_refused` and `sql_timeout`, the server's
own memory stays small, and the next query is answered."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.serving import serving


def high_water_rss(pid: int) -> int:
    """The process's peak resident set size (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc")


# A hang guard, not a timing assertion: in the server's process the levenshtein ran about two minutes.
@pytest.mark.timeout(90)
def test_user_sql_cannot_take_the_server_down(tmp_path: Path) -> None:
    # Given a server whose user SQL may take 2 GiB of address space and half a second
    settings = {"TOOLCAT_SQL_MEMORY_BYTES": str(2**31), "TOOLCAT_SQL_TIMEOUT_SECONDS": "0.5"}
    with serving(tmp_path / "home", env=settings) as served, served.client() as client:
        # When an anonymous loopback caller asks for a list of 200 million integers (1.6 GB in one value:
        # it ran 253 s and grew the server to 14.5 GB)
        huge = client.post("/v1/sql", json={"query": "SELECT len(range(200000000)) AS n"})
        # Then it is refused for its memory
        assert huge.status_code == 422 and huge.json()["code"] == "sql_refused", huge.text
        # When one scalar call runs for minutes without reaching DuckDB's interrupt check
        deaf = client.post("/v1/sql", json={"query": "SELECT levenshtein(repeat('a', 300000), repeat('b', 300000))"})
        # Then it ends as sql_timeout (its worker is killed)
        assert deaf.status_code == 422 and deaf.json()["code"] == "sql_timeout", deaf.text
        # And the server never held more than a few hundred MB, and answers the next query
        assert high_water_rss(served.process.pid) < 768 * 2**20
        assert client.post("/v1/sql", json={"query": "SELECT 42 AS n"}).json() == [{"n": 42}]
