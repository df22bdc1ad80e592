"""End to end: what the command line adds to the catalog's answers. Error hints name toolcat's own commands
(the domain's messages do not), and `infra.cli.run` answers a command with the same document `--json`
prints, without printing it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domain.errors import UnknownRelease, UnknownSubject, UsageError
from infra.cli import main, run
from infra.cli.output import message_with_hint
from infra.cli.registry import ArgumentsError
from infra.context import HomeNotFound
from infra.settings import Settings

REGISTER = ("--source", "builtin", "--group", "core", "--tier", "default", "--visibility", "public")


def refused(run_: Any, code: str, exit_code: int = 3) -> dict[str, Any]:
    assert run_.code == exit_code, f"exit {run_.code}\nstdout: {run_.stdout}\nstderr: {run_.stderr}"
    assert run_.error["code"] == code, run_.error
    return run_.error


def test_a_write_naming_a_missing_unit_is_told_once_how_to_create_it(toolcat: Any) -> None:
    assert toolcat("init").code == 0
    error = refused(toolcat("agent", "create", "ada", "--unit", "research"), "unknown_subject")
    assert error["message"].startswith("no unit 'research'")
    assert error["message"].count("create it with 'toolcat unit create research'") == 1
    assert error["details"]["subject"] == "unit:research"
    text = toolcat("unit", "create", "papers", "--parent", "research", json_output=False)
    assert text.code == 3 and text.stdout == ""
    assert text.stderr.count("create it with 'toolcat unit create research'") == 1, text.stderr
    assert text.stderr.rstrip().endswith("[unknown_subject]")
    # A read of a missing unit asks nothing to be created.
    read = refused(toolcat("effective", "unit:research"), "unknown_subject")
    assert "toolcat unit create" not in read["message"]


def test_an_unpublished_release_is_told_once_how_to_publish_it(toolcat: Any) -> None:
    for args in (("init",), ("tool", "register", "files.list", *REGISTER), ("alias", "add", "files.list", "ls.x"),
                 ("alias", "deprecate", "ls.x")):
        assert toolcat(*args).code == 0, args
    error = refused(toolcat("alias", "retire", "ls.x", "--release", "9.9.9"), "unknown_release")
    assert error["message"].count("publish it first with 'toolcat release publish 9.9.9'") == 1
    assert error["details"]["release"] == "9.9.9"


@pytest.mark.parametrize("error, kind, hint", [
    (UnknownSubject("no unit 'eng'", subject="unit:eng"), "write", "create it with 'toolcat unit create eng'"),
    (UnknownSubject("no unit 'eng'; create it with 'toolcat unit create eng'", subject="unit:eng"), "write",
     "create it with 'toolcat unit create eng'"),
    (UnknownRelease("release 2.0.0 has not been published yet", release="2.0.0"), "write",
     "publish it first with 'toolcat release publish 2.0.0'"),
    (UnknownRelease("release 2.0.0 has not been published; publish it first with 'toolcat release publish "
                    "2.0.0'", release="2.0.0"), "write", "publish it first with 'toolcat release publish 2.0.0'"),
    (UsageError("the time a change takes effect, 'soon', is not an ISO 8601 time", effective_at="soon"), "write",
     "--effective-at"),
    (UsageError("--effective-at 'soon' is not an ISO 8601 time", effective_at="soon"), "read", "--effective-at"),
])
def test_hints_are_added_once_whether_or_not_the_message_already_gives_them(error: Any, kind: str,
                                                                           hint: str) -> None:
    message = message_with_hint(error, kind)
    assert message.startswith(error.message)
    assert message.count(hint) == 1, message


def test_hints_only_where_they_apply() -> None:
    agent = UnknownSubject("no agent 'ada'", subject="agent:ada")
    assert message_with_hint(agent, "write") == agent.message
    unit_read = UnknownSubject("no unit 'eng' at position 3", subject="unit:eng")
    assert message_with_hint(unit_read, "read") == unit_read.message
    plain = UsageError("give --at or --as-of, not both")
    assert message_with_hint(plain, "read") == plain.message


def test_run_answers_with_the_document_that_json_prints_and_prints_nothing(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(home=home, event_store_url=None, kafka_bootstrap=None)
    written = run(["init", "--policy", "spring-voyage"], settings)
    assert written.exit_code == 0 and [e["type"] for e in written.document["events"]] == ["Policy.Recorded"]
    run(["tool", "register", "sv.directory.list", *REGISTER], settings)
    run(["unit", "create", "org"], settings)
    reads = (["effective", "unit:org"], ["tool", "show", "sv.directory.list"], ["sql", "select 1 AS one"],
             ["audit", "verify"])
    replies = [run(argv, settings) for argv in reads]
    assert capsys.readouterr().out == ""
    assert [t["tool_id"] for t in replies[0].document["tools"]] == ["sv.directory.list"]
    for argv, reply in zip(reads, replies):
        assert main([*argv, "--json"], settings) == 0
        assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(reply.document, default=str)), argv


def test_run_raises_what_main_reports(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(home=home, event_store_url=None, kafka_bootstrap=None)
    with pytest.raises(ArgumentsError) as bad_arguments:
        run(["tool", "register", "x"], settings)
    assert bad_arguments.value.exit_code == 2 and "--source" in bad_arguments.value.message
    assert "usage: toolcat tool register" in bad_arguments.value.usage
    with pytest.raises(HomeNotFound):  # a read never creates the home it is pointed at
        run(["effective", "agent:nobody"], settings)
    assert not home.exists()
    run(["init"], settings)
    with pytest.raises(UnknownSubject):
        run(["effective", "agent:nobody"], settings)
    assert capsys.readouterr() == ("", "")
    assert main(["tool", "register", "x", "--json"], settings) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and json.loads(printed.err)["error"]["code"] == "usage"
