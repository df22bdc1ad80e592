"""End to end: a token's life on a running `toolcat serve` — made (bound to a subject, expiring), listed
(never its secret), replaced, revoked and expired; each end refuses the token at once and closes the
watch streams it holds open (issue 28, finding 3)."""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from infra.http.auth import TOKENS_FILE, digest
from tests.serving import Served, serving
from tests.support import call_toolcat, error_of, ok, run_in_process, toolcat_env

STORY = [["init", "--policy", "tyrum"], ["unit", "create", "eng"], ["agent", "create", "triage", "--unit", "eng"],
         ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default",
          "--visibility", "public"], ["grant", "add", "agent:triage", "read"]]
WATCH = "/v1/subjects/agent:triage/watch"
# A stream that stays open sends nothing for longer than this (its pings come every 15 s): reading it
# then fails the test instead of hanging it.
QUIET_SECONDS = 8


def token(home: Path, *args: str) -> Any:
    """`toolcat token ARGS --json` on `home`, which must succeed."""
    return ok(call_toolcat("token", *args, env=toolcat_env("t", {"TOOLCAT_HOME": str(home)})))


def token_fails(home: Path, *args: str) -> tuple[int, dict[str, Any]]:
    run = call_toolcat("token", *args, env=toolcat_env("t", {"TOOLCAT_HOME": str(home)}))
    return run.code, error_of(run)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("tokens") / "home"
    run_in_process(home, STORY)
    token(home, "create", "admin", "--scope", "read,write,audit")
    with serving(home) as server:
        yield server


@contextlib.contextmanager
def open_stream(served: Served, secret: str) -> Iterator[tuple[httpx.Response, Iterator[str]]]:
    """A watch stream on agent:triage, its first event (the whole set) read."""
    with served.client(secret, timeout=httpx.Timeout(QUIET_SECONDS, connect=10)) as client, \
            client.stream("GET", WATCH) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        first = list(itertools.takewhile(bool, lines))  # up to the blank line ending the first event
        assert "event: changes" in first
        yield response, lines


def ended(lines: Iterator[str]) -> bool:
    """Whether the stream ends (rather than staying open past QUIET_SECONDS, which raises)."""
    for line in lines:
        assert line == "" or line.startswith(":"), f"the stream sent {line!r} after its token ended"
    return True


def test_revoking_a_token_refuses_it_and_ends_its_open_stream_but_not_others(served: Served) -> None:
    # Given two readers, each watching agent:triage
    doomed = token(served.home, "create", "doomed", "--scope", "read")["token"]
    kept = token(served.home, "create", "kept", "--scope", "read")["token"]
    with open_stream(served, doomed) as (_, lines), open_stream(served, kept) as (other, _):
        # When the first one's token is revoked
        revoked = token(served.home, "revoke", "doomed")
        assert revoked["name"] == "doomed" and "token" not in revoked
        # Then its stream ends, it is refused, and the other token still reads
        assert ended(lines)
        with served.client(doomed) as gone:
            refused = gone.get("/v1/resolve/read")
            assert refused.status_code == 401 and refused.json()["code"] == "unauthenticated"
        with served.client(kept) as reader:
            assert reader.get("/v1/resolve/read").status_code == 200
        assert not other.is_closed
    # And revoking it again, or a name no token has, is a clear usage error that changes nothing
    before = (served.home / TOKENS_FILE).read_text()
    code, error = token_fails(served.home, "revoke", "doomed")
    assert (code, error["code"]) == (2, "unknown_token") and "doomed" in error["message"]
    assert (served.home / TOKENS_FILE).read_text() == before


def test_replacing_a_token_by_one_of_the_same_name_ends_the_old_ones_stream(served: Served) -> None:
    old = token(served.home, "create", "rotated", "--scope", "read")["token"]
    with open_stream(served, old) as (_, lines):
        new = token(served.home, "create", "rotated", "--scope", "read")["token"]
        assert ended(lines)
    with served.client(old) as stale, served.client(new) as fresh:
        assert stale.get("/v1/resolve/read").status_code == 401
        assert fresh.get("/v1/resolve/read").status_code == 200


def test_an_expired_token_is_refused_saying_so_and_its_stream_ends(served: Served) -> None:
    made = token(served.home, "create", "brief", "--scope", "read", "--expires-in", "3s")
    assert made["expires"] is not None and made["created"] < made["expires"]
    with open_stream(served, made["token"]) as (_, lines):
        assert ended(lines)
    with served.client(made["token"]) as late:
        refused = late.get("/v1/resolve/read")
    assert refused.status_code == 401 and "expired" in refused.json()["detail"]
    assert refused.json()["details"]["expired"] is True


def test_a_subject_bound_call_token_reads_nothing_over_http(served: Served) -> None:
    # The call scope is for the MCP gateway, acting as the token's own subject: no catalog read, no write.
    bound = token(served.home, "create", "triage-bot", "--scope", "call", "--subject", "agent:triage")
    assert (bound["scopes"], bound["subject"]) == (["call"], "agent:triage")
    with served.client(bound["token"]) as agent:
        for answer in (agent.get("/v1/subjects/agent:triage/effective"), agent.get("/v1/resolve/read"),
                       agent.post("/v1/grant/add", json={"subject": "agent:triage", "target": "read"})):
            assert answer.status_code == 403 and answer.json()["code"] == "forbidden"


@pytest.mark.parametrize("args", [
    ["--scope", "call"],                                          # call needs a subject
    ["--scope", "read", "--subject", "agent:triage"],            # a subject is for call tokens only
    ["--scope", "call,read", "--subject", "agent:triage"],
    ["--scope", "call", "--subject", "triage"],                   # not unit:U or agent:A
    ["--scope", "call", "--subject", "agent:"],
    ["--scope", "read", "--expires-in", "0s"],
    ["--scope", "read", "--expires-in", "soon"],
    ["--scope", "read", "--expires-in", "99999999d"],
    ["--scope", "read,admin"],
])
def test_token_create_refuses_bad_options_and_writes_nothing(home: Path, args: list[str]) -> None:
    code, error = token_fails(home, "create", "x", *args)
    assert (code, error["code"]) == (2, "usage")
    assert not (home / TOKENS_FILE).exists()


def test_token_list_shows_each_token_and_when_it_was_last_used_but_never_the_secret(home: Path) -> None:
    run_in_process(home, STORY)
    used = token(home, "create", "used", "--scope", "read,audit")
    idle = token(home, "create", "idle", "--scope", "read", "--expires-in", "7d")
    with serving(home) as server, server.client(used["token"]) as reader:
        assert reader.get("/v1/resolve/read").status_code == 200
    # The server writes down uses at most once a minute, and when it stops.
    listed = token(home, "list")
    assert [t["name"] for t in listed] == ["idle", "used"]
    assert all(set(t) == {"name", "scopes", "subject", "created", "expires", "last_used"} for t in listed)
    by_name = {t["name"]: t for t in listed}
    assert by_name["used"]["last_used"] is not None and by_name["used"]["scopes"] == ["read", "audit"]
    assert by_name["idle"]["last_used"] is None and by_name["idle"]["expires"] == idle["expires"]
    human = call_toolcat("token", "list", env=toolcat_env("t", {"TOOLCAT_HOME": str(home)}), json_output=False)
    for made in (used, idle):
        for secret in (made["token"], digest(made["token"])):
            assert secret not in str(listed) and secret not in human.stdout


def test_still_valid_follows_the_token_file(home: Path) -> None:
    # The check long-lived sessions (watch streams, MCP sessions) poll: cheap, and true until the end.
    from infra.http.auth import TokenBook
    secret = token(home, "create", "agent", "--scope", "call", "--subject", "unit:eng", "--expires-in", "1h")["token"]
    book = TokenBook(home, "local")
    principal = book.principal(secret)
    assert principal is not None and principal.subject == "unit:eng" and principal.expires_at is not None
    assert book.still_valid(principal)
    token(home, "revoke", "agent")
    assert not book.still_valid(principal)
