"""`toolcat demo`: builds the bundled example catalogs in a fresh home and walks through what they show.

With a reachable broker (TOOLCAT_KAFKA_BOOTSTRAP) or `--kafka` (starts the dev broker), each catalog is
also streamed through Kafka into a second read model, and the two fingerprints are compared."""
from __future__ import annotations

import contextlib
import io
import json
import shlex
import shutil
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from domain.errors import ToolcatError, UsageError
from infra.hints import command
from infra.dev.broker import DevBroker
from infra.dev.demo_gateway import gateway_act
from infra.dev.example_clock import DIRECTIVE, ExampleClock
from infra.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MARKER = ".toolcat-demo"
CATALOGS = ("tyrum", "spring-voyage")


def script(path: Path) -> list[tuple[str | None, list[str]]]:
    """An example file's commands, each with the clock time a `@ TIME` line set just before it (or None)."""
    lines, moment = [], None
    for raw in path.read_text().splitlines():
        text = raw.strip()
        if text.startswith(DIRECTIVE + " "):
            moment = text[len(DIRECTIVE):].strip()
        elif text and not text.startswith("#"):
            lines.append((moment, shlex.split(text)))
            moment = None
    return lines


def script_lines(path: Path) -> list[list[str]]:
    """An example file's commands (toolcat arguments), without its clock."""
    return [args for _, args in script(path)]


def prepare_home(home: Path) -> None:
    """The demo owns its home: it refuses a catalog it did not create, and starts its own afresh."""
    if home.exists() and not home.is_dir():
        raise UsageError(f"{home} is a file; run the demo with --home pointing at a directory", home=str(home))
    if home.exists() and any(home.iterdir()) and not (home / MARKER).exists():
        raise UsageError(f"{home} is not empty and was not made by the demo; run the demo with --home "
                         "pointing at an empty or demo directory", home=str(home))
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    (home / MARKER).write_text("created by toolcat demo\n")


class Demo:
    def __init__(self, settings: Settings, quiet: bool) -> None:
        self.quiet = quiet
        # The demo always runs on the embedded default, whatever event store the environment names.
        self.embedded = settings.model_copy(update={"event_store_url": None, "kafka_bootstrap": None})

    def toolcat(self, home: Path, *args: str, settings: Settings | None = None, show: bool = True) -> Any:
        """Run one command in-process and return its JSON document; show its readable form."""
        from infra.cli import output, run
        argv = [*args, "--home", str(home), "--json"]
        try:
            reply = run(argv, settings or self.embedded)
        except ToolcatError as error:
            raise UsageError(f"demo step failed: toolcat {' '.join(argv)}: {json.dumps(error.as_document())}"
                             ) from error
        if reply.exit_code != 0:
            raise UsageError(f"demo step failed: toolcat {' '.join(argv)}: exit {reply.exit_code}")
        if show and not self.quiet:
            readable = io.StringIO()  # not a terminal: tables are as wide as in a pipe, whatever the demo's stdout
            with contextlib.redirect_stdout(readable):
                output.show(reply, as_json=False)
            sys.stdout.write(readable.getvalue().rstrip() + "\n")
        return json.loads(json.dumps(reply.document, default=str))

    def say(self, text: str) -> None:
        if not self.quiet:
            sys.stdout.write(text + "\n")

    def heading(self, text: str) -> None:
        self.say(f"\n== {text} " + "=" * max(3, 70 - len(text)))

    def build(self, name: str, home: Path, adapt: Callable[[list[str]], list[str]] | None = None
              ) -> dict[str, Any]:
        """Run examples/NAME.toolcat in `home` (each line through `adapt` when given)."""
        commands, clock = script(EXAMPLES / f"{name}.toolcat"), ExampleClock()
        for moment, args in commands:
            if moment is not None:
                clock.set(moment)
            with clock.recording():
                self.toolcat(home, *(adapt(args) if adapt else args), show=False)
        head = self.toolcat(home, "sql", "SELECT count(*) AS events, max(position) AS head FROM events",
                            show=False)[0]
        self.say(f"{name}: {len(commands)} commands, {head['events']} events, head position {head['head']}")
        return {"commands": len(commands), **head}

    def sql(self, home: Path, question: str, query: str) -> list[dict[str, Any]]:
        self.say(question)
        return self.toolcat(home, "sql", query)


def tyrum_story(demo: Demo, home: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    revoked = demo.toolcat(home, "sql", "SELECT position FROM events WHERE type = 'Grants.Revoked'", show=False)
    before = revoked[0]["position"] - 1
    demo.heading("tyrum: the effective tool set of agent:triage (provenance, inheritance, exposure)")
    results["effective"] = demo.toolcat(home, "effective", "agent:triage")
    demo.heading("tyrum: why does triage see memory.write, and how is it exposed?")
    results["explain"] = demo.toolcat(home, "explain", "agent:triage", "memory.write")
    demo.heading(f"tyrum: as of position {before}, just before websearch was revoked")
    results["before_revoke"] = demo.toolcat(home, "effective", "agent:triage", "--at", str(before))
    now = {t["tool_id"] for t in results["effective"]["tools"]}
    then = {t["tool_id"] for t in results["before_revoke"]["tools"]}
    results["revoked_tools"] = sorted(then - now)
    demo.say(f"…and now: {', '.join(results['revoked_tools']) or 'nothing'} is gone")
    demo.heading("tyrum: resolving a shim, a deprecated alias and a renamed plugin tool")
    results["resolve"] = [demo.toolcat(home, "resolve", i) for i in ("tool.fs.read", "mcp.memory.seed",
                                                                      "acme.ticket.create")]
    demo.say("(mcp.memory.search was retired in 1.3.0: resolving it is rejected with a pointer to memory.search)")
    demo.heading("tyrum: the audit timeline of the retired alias mcp.memory.search")
    results["audit_alias"] = demo.toolcat(home, "audit", "alias", "mcp.memory.search")
    demo.heading("tyrum: the hash chain, recomputed from the event store")
    results["verify"] = demo.toolcat(home, "audit", "verify")
    demo.heading("tyrum: SQL over history")
    results["sql"] = [
        demo.sql(home, "Who was granted websearch, from which position until which?",
                 "SELECT subject_kind, subject, valid_from, valid_to FROM grant_history WHERE target = 'websearch' "
                 "ORDER BY valid_from"),
        demo.sql(home, "How did mcp.memory.search move through its lifecycle?",
                 "SELECT alias, lifecycle, valid_from, valid_to FROM alias_history "
                 "WHERE alias = 'mcp.memory.search' ORDER BY valid_from"),
        demo.sql(home, "How many tools did each group have when release 1.1.0 was published?",
                 "SELECT t.group_name, count(*) AS tools FROM tool_history h JOIN tools t USING (tool_key) "
                 "WHERE h.valid_from <= (SELECT position FROM releases WHERE version = '1.1.0') "
                 "AND (h.valid_to IS NULL OR h.valid_to > (SELECT position FROM releases WHERE version = '1.1.0')) "
                 "GROUP BY 1 ORDER BY 2 DESC, 1"),
    ]
    results.update(route_story(demo, home))
    return results


def route_story(demo: Demo, home: Path) -> dict[str, Any]:
    """ADR-027 and ARCH-19 on the tyrum example: a denied route with its evidence, and a node picked."""
    demo.heading("tyrum: triage read its location, then calls the web through a shim — denied, with evidence")
    denied = demo.toolcat(home, "route", "check", "agent:triage", "--call", "tool.http.fetch",
                          "--after", "tool.location.get")
    demo.heading("tyrum: which node takes a desktop screenshot on the main lane?")
    node = demo.toolcat(home, "route", "node", "tool.desktop.screenshot", "--lane", "main")
    return {"route_denied": denied, "route_node": node}


def spring_voyage_story(demo: Demo, home: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    demo.heading("spring-voyage: agent:librarian — platform, connector (inherited), image and explicit tiers")
    results["effective"] = demo.toolcat(home, "effective", "agent:librarian")
    demo.heading("spring-voyage: why does librarian see arxiv.search?")
    results["explain"] = demo.toolcat(home, "explain", "agent:librarian", "arxiv.search")
    demo.heading("spring-voyage: agent:helpdesk, stateless and allowlisted")
    results["helpdesk"] = demo.toolcat(home, "effective", "agent:helpdesk")
    return results


def through_kafka(demo: Demo, home: Path, name: str, bootstrap: str) -> dict[str, Any]:
    """Relay the catalog to Kafka, project it from Kafka alone into a second home, compare fingerprints."""
    suffix = uuid.uuid4().hex[:8]
    settings = demo.embedded.model_copy(update=dict(
        kafka_bootstrap=bootstrap, kafka_events_topic=f"toolcat.demo.{name}.{suffix}",
        kafka_effective_topic=f"toolcat.demo.{name}.effective.{suffix}",
        kafka_dlq_topic=f"toolcat.demo.{name}.dlq.{suffix}", kafka_group_id=f"demo-{suffix}",
        kafka_session_timeout_ms=6000))
    copy = home.parent / f"{name}-from-kafka"
    relayed = demo.toolcat(home, "relay", settings=settings, show=False)
    demo.toolcat(copy, "project", "--from", "kafka", "--idle-seconds", "2", settings=settings, show=False)
    original = demo.toolcat(home, "audit", "fingerprint", show=False)
    streamed = demo.toolcat(copy, "audit", "fingerprint", show=False)
    matches = original == streamed
    demo.say(f"{name}: relayed {relayed['published']} events to {settings.kafka_events_topic}; the read model "
             f"built from Kafka alone (position {streamed['position']}) has fingerprint "
             f"{streamed['fingerprint'][:16]}… — {'identical to' if matches else 'DIFFERENT FROM'} the one "
             "built from the store")
    return {"topic": settings.kafka_events_topic, "published": relayed["published"],
            "store": original, "kafka": streamed, "matches": matches}


def run_demo(settings: Settings, kafka: bool, quiet: bool) -> dict[str, Any]:
    """Build both catalogs in a fresh home (`settings.home`), walk through them, and with a broker (`kafka`
    starts the dev broker) stream them through Kafka too; answers everything shown as one document."""
    demo = Demo(settings, quiet)
    home = settings.home
    prepare_home(home)
    homes = {name: home / name for name in CATALOGS}
    demo.heading("Building the example catalogs in a fresh home")
    document: dict[str, Any] = {"home": str(home), "catalogs": {n: demo.build(n, h) for n, h in homes.items()}}
    document["tyrum"] = tyrum_story(demo, homes["tyrum"])
    document["spring_voyage"] = spring_voyage_story(demo, homes["spring-voyage"])
    document["gateway"] = gateway_act(demo, home / "gateway")
    broker = DevBroker() if kafka else None
    bootstrap = broker.start().bootstrap if broker else settings.kafka_bootstrap
    try:
        if bootstrap:
            demo.heading(f"Streaming both catalogs through Kafka ({bootstrap})")
            document["kafka"] = {n: through_kafka(demo, h, n, bootstrap) for n, h in homes.items()}
        else:
            again = command("demo", "--kafka", home=str(home))
            demo.say(f"\n(no broker: set TOOLCAT_KAFKA_BOOTSTRAP or run '{again}' to also stream the "
                     "catalogs through Kafka and compare fingerprints)")
    finally:
        if broker:
            broker.stop()
    return document
