"""Secrets stay out (issue 17): the PostgreSQL event store's password, given in TOOLCAT_EVENT_STORE_URL,
never reaches an event, a read-model row, an answer or error message, a log line or the audit report,
whatever the commands do and however they fail."""
from __future__ import annotations

import contextlib
import io
import logging
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import duckdb
import pytest

from domain.errors import Unavailable
from infra.cli import main
from infra.cli.output import print_error
from infra.settings import Settings
from tests.support import Run, toolcat_environ

PASSWORD = "pw-7f3c1e9a/Secret@store"  # '/' and '@' make the URL carry it percent-encoded
WRITES = [
    ["init", "--policy", "tyrum"],
    ["release", "publish", "1.0.0"],
    ["tool", "register", "memory.seed", "--source", "builtin_mcp", "--group", "memory", "--tier", "default",
     "--visibility", "public", "--description", "Seed memory"],
    ["alias", "add", "memory.seed", "mcp.memory.seed"],
    ["alias", "deprecate", "mcp.memory.seed"],
    ["unit", "create", "eng"],
    ["agent", "create", "triage", "--unit", "eng"],
    ["grant", "add", "agent:triage", "memory.seed", "--reason", "triage seeds memory"],
]


def with_password(url: str) -> str:
    parts = urlsplit(url)
    netloc = f"{parts.username or 'postgres'}:{quote(PASSWORD, safe='')}@{parts.hostname}:{parts.port or 5432}"
    return urlunsplit(parts._replace(netloc=netloc))


@pytest.fixture
def secret_settings(home: Path, postgres_url: str) -> Settings:
    """Settings whose store URL carries PASSWORD (the local test server trusts, so any password opens it)."""
    if urlsplit(postgres_url).password:
        pytest.skip("this PostgreSQL server checks passwords; the test needs one that trusts")
    return Settings(home=home, event_store_url=with_password(postgres_url))


def run(settings: Settings, *args: str) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*args, "--json"], settings)
    return Run(code, out.getvalue(), err.getvalue())


def assert_secret_free(text: str, where: str) -> None:
    for form in (PASSWORD, quote(PASSWORD, safe="")):
        assert form not in text, f"the store's password appears in {where}"


def test_the_store_password_reaches_no_event_row_answer_error_log_or_report(
        secret_settings: Settings, postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    outputs: list[Run] = []
    with toolcat_environ("tester"):
        for args in WRITES:
            outputs.append(run(secret_settings, *args))
            assert outputs[-1].code == 0, outputs[-1].stderr
        reads = [["effective", "agent:triage"], ["sql", "SELECT * FROM events"], ["audit", "verify"],
                 ["audit", "alias", "mcp.memory.seed"], ["tool", "show", "memory.seed"],
                 ["audit", "report", "--format", "html", "-o", str(tmp_path / "report.html")],
                 ["audit", "report", "--format", "json", "-o", str(tmp_path / "report.json")]]
        for args in reads:
            outputs.append(run(secret_settings, *args))
            assert outputs[-1].code == 0, outputs[-1].stderr
        failures = [
            (secret_settings, ["unit", "create", "Not A Name"], 3),
            (secret_settings, ["sql", "SELECT * FROM no_such_table"], 2),
            (secret_settings.model_copy(update={"event_store_url": f"postgresql://u:{PASSWORD}@host"}),
             ["unit", "create", "ops"], 2),
        ]
        for settings, args, code in failures:
            outputs.append(run(settings, *args))
            assert outputs[-1].code == code, outputs[-1].stderr

    for output in outputs:
        assert_secret_free(output.stdout + output.stderr, "a command's answer or error")
    assert "***" in outputs[-1].stderr  # the malformed URL is repeated, its password masked
    assert_secret_free("\n".join(r.getMessage() for r in caplog.records), "a log line")
    for report in ("report.html", "report.json"):
        assert_secret_free((tmp_path / report).read_text(), f"the audit report {report}")
    assert_secret_free(read_model_text(secret_settings), "a read-model row")
    assert_secret_free(store_text(postgres_url), "a stored event")


def read_model_text(settings: Settings) -> str:
    con = duckdb.connect(str(settings.read_model_path), read_only=True)
    try:
        tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        assert "events" in tables
        return "\n".join(str(con.execute(f'SELECT COLUMNS(*)::VARCHAR FROM "{table}"').fetchall()) for table in tables)
    finally:
        con.close()


def store_text(postgres_url: str) -> str:
    """Every row of every table in the test's PostgreSQL schema, event payloads decoded as text."""
    import psycopg
    schema = postgres_url.rpartition("schema=")[2]
    with psycopg.connect(postgres_url.partition("?")[0]) as con:
        tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables WHERE "
                                            "table_schema = %s", [schema]).fetchall()]
        rows = [row for table in tables for row in con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()]
    assert any(b"memory.seed" in value for row in rows for value in row if isinstance(value, bytes))
    return "\n".join(str(value) if not isinstance(value, bytes) else value.decode("utf-8", "replace")
                     for row in rows for value in row)


@pytest.mark.parametrize("url", [
    f"postgresql://app:{quote(PASSWORD, safe='')}@db:5432/toolcat",  # well-formed: percent-encoded
    f"postgresql://app:{PASSWORD}@db:5432/toolcat",  # malformed: '/' and '@' left as they are
    f"postgresql://app:{PASSWORD}@db:99999/toolcat?schema=a@b",
])
def test_a_message_repeating_the_store_url_or_password_in_any_form_is_scrubbed(url: str) -> None:
    # A driver's message (say, after an unreachable server) may repeat the URL or the password.
    settings = Settings(event_store_url=url, kafka_sasl_password="kafka-Secret-42")
    message = f"cannot open {url}: password {PASSWORD} or {quote(PASSWORD, safe='')}; sasl kafka-Secret-42"
    scrubbed = settings.scrub(message)
    assert_secret_free(scrubbed, "a scrubbed message")
    assert "kafka-Secret-42" not in scrubbed and scrubbed.count("***") >= 4


@pytest.mark.parametrize("as_json", [False, True])
def test_an_error_printed_by_the_command_line_masks_every_secret(as_json: bool,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(event_store_url=f"postgresql://app:{quote(PASSWORD, safe='')}@db/toolcat")
    driver_said = Unavailable(f"the event store is unavailable: connection to {settings.event_store_url} failed "
                              f"(password {PASSWORD!r})", store=settings.event_store_url)
    print_error(driver_said, as_json, "write", settings.secrets())
    printed = capsys.readouterr().err
    assert_secret_free(printed, "a printed error")
    assert "unavailable" in printed and "***" in printed
