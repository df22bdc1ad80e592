"""The pipeline commands: `project` and `rebuild` (the read model), `relay` (store → Kafka) and `watch`
(a subject's changelog from Kafka)."""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infra.cli.output import Reply, notices, plain, print_text
from infra.cli.registry import Commands
from infra.progress import reporting
from infra.signals import StopFlag

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("project", cmd_project, "bring the DuckDB read model up to date", "pipeline")
    p.add_argument("--follow", action="store_true", help="keep projecting new events until stopped")
    p.add_argument("--from", dest="source", choices=("store", "kafka"), default="store",
                   help="where the events come from: the event store (default) or Kafka toolcat.events")
    p.add_argument("--idle-seconds", type=float, default=3.0,
                   help="with --from kafka and no --follow: stop after this long without messages")
    p = commands.add("relay", cmd_relay, "publish stored events to Kafka toolcat.events", "pipeline")
    p.add_argument("--follow", action="store_true", help="keep relaying new events until stopped")
    p.add_argument("--from-position", type=int, metavar="N", help="relay again from position N")
    p = commands.add("watch", cmd_watch, "print a subject's effective-set changes from Kafka, as they happen",
                     "pipeline", json_help="print one JSON line per change as it happens ({subject, position, "
                                           "changes}), and one {subject, position, caught_up: true} line")
    p.add_argument("subject", metavar="SUBJECT", help="unit:NAME or agent:NAME")
    p.add_argument("--timeout", type=float, help="stop after this many seconds without messages")
    p.add_argument("--from-position", type=int, default=0, metavar="N",
                   help="report only changes after position N (the last position a previous run printed): "
                        "a restart resumes instead of replaying from the start")
    p = commands.add("rebuild", cmd_rebuild, "rebuild the read model from the store and swap it in, once it "
                     "agrees with the hashes the old read model recorded and the seals (exit 5 otherwise)",
                     "pipeline")
    p.add_argument("--accept-altered-history", action="store_true",
                   help="swap in a rebuild that disagrees with the recorded hashes or the seals, recording an "
                        "audit event that names the positions and their old and new hashes (needs --reason)")
    p.add_argument("--reason", help="why altered history is accepted; stored with the audit event")
    p.add_argument("--actor", help="who accepts it (default TOOLCAT_ACTOR, else the OS user)")


def store_head(ctx: Context) -> Callable[[], int | None]:
    """The store's last position, asked when progress is reported (the lag of a follower)."""
    return lambda: ctx.catalog.recorder.max_notification_id()


def follower_progress(ctx: Context, what: str, head: Callable[[], int | None]) -> Any:
    """Progress of a command that may follow: off a terminal, a line a minute or every 10,000 events while
    following, every few seconds while catching up."""
    following = bool(ctx.args.follow)
    return reporting(what, ctx.as_json, head, every=60.0 if following else 5.0,
                     per_events=10_000 if following else None)


def cmd_project(ctx: Context) -> Reply:
    from infra.projecting import project_kafka, project_store
    from infra.replica import mark_replica
    from infra.wiring import open_read_model
    from projections.projector import Projector
    ctx.refuse_if_served("project with another process")
    a, stop = ctx.args, StopFlag()
    head = store_head(ctx) if a.source == "store" else (lambda: None)  # Kafka: positions only
    if a.source == "kafka":
        mark_replica(ctx.settings)
    try:
        with follower_progress(ctx, f"project from the {a.source}", head) as progress:
            if a.source == "store":
                tracking = project_store(ctx.settings, ctx.catalog, a.follow, stop, progress)
            else:
                tracking = project_kafka(ctx.settings, a.follow, a.idle_seconds, stop, progress)
    except KeyboardInterrupt:
        tracking = Projector(open_read_model(ctx.settings)).tracking()
    document = {"position": tracking.position, "events": tracking.events, "source": a.source}
    return Reply(document, [f"read model at position {tracking.position} ({tracking.events} events, "
                            f"from the {a.source})"])


def cmd_rebuild(ctx: Context) -> Reply:
    """Build a fresh read model beside the live one, check it against everything that vouched for the
    history (the hashes the live one recorded, the seals), then swap it in with one atomic rename. A
    rebuild must not launder an alteration that `audit verify` would convict."""
    from domain.errors import IntegrityFailure, UsageError
    from infra.wiring import open_read_model
    from projections.catchup import catch_up
    from projections.connection import connect
    from projections.projector import Projector
    from projections.verify import disagreement_message, rebuild_disagreements
    ctx.refuse_if_served("rebuild it")
    accept = ctx.args.accept_altered_history
    if accept and not (ctx.args.reason or "").strip():
        raise UsageError("--accept-altered-history needs --reason TEXT: the acceptance is recorded on the chain "
                         "with why it was made")
    live = ctx.settings.read_model_path
    fresh = live.with_name(live.name + ".rebuild")
    fresh.unlink(missing_ok=True)
    con = open_read_model(ctx.settings, fresh)
    accepted = None
    try:
        head = ctx.catalog.recorder.max_notification_id() or 0
        with reporting("rebuild", ctx.as_json, lambda: head) as progress:
            tracking = catch_up(ctx.catalog, Projector(con), progress=progress)
        old = connect(str(live), read_only=True) if live.exists() else None
        try:
            found = rebuild_disagreements(con, old)
        finally:
            if old is not None:
                old.close()
        if found["altered"] or found["seals"]:
            if not accept:
                raise IntegrityFailure(
                    disagreement_message(found, "rebuild refused, the live read model is kept")
                    + ". Inspect with 'toolcat audit verify'; to swap it in all the same, run 'toolcat rebuild "
                    "--accept-altered-history --reason TEXT'", **found)
            result = ctx.catalog.accept_altered_history(found["altered"],
                                                        [s["seal_position"] for s in found["seals"]], ctx.meta())
            tracking = catch_up(ctx.catalog, Projector(con))  # the acceptance, on the chain and in the model
            accepted = {**found, "position": result.position, "reason": ctx.args.reason}
    except BaseException:
        con.close()
        fresh.unlink(missing_ok=True)
        fresh.with_name(fresh.name + ".wal").unlink(missing_ok=True)
        raise
    con.close()
    _keep_decisions(live, fresh)
    # A stale write-ahead log of the old file must not be replayed onto the new one.
    live.with_name(live.name + ".wal").unlink(missing_ok=True)
    os.replace(fresh, live)
    document = {"position": tracking.position, "events": tracking.events, "accepted": accepted}
    lines = [f"rebuilt the read model: {tracking.events} events, position {tracking.position}"]
    if accepted:
        lines.append(disagreement_message(found, f"accepted altered history (recorded at position "
                                                 f"{accepted['position']})"))
    return Reply(document, lines)


def _keep_decisions(live: Path, fresh: Path) -> None:
    """The MCP gateway's decision log is not derived from the events: a rebuild copies it over."""
    import duckdb
    if not live.exists():
        return
    con = duckdb.connect(str(fresh))
    try:
        con.execute("ATTACH '{}' AS live (READ_ONLY)".format(str(live).replace("'", "''")))
        if con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = 'live' "
                       "AND table_name = 'gateway_decisions'").fetchone()[0]:
            con.execute("INSERT INTO gateway_decisions SELECT * FROM live.gateway_decisions")
        con.execute("DETACH live")
    finally:
        con.close()


def cmd_relay(ctx: Context) -> Reply:
    from infra import kafka_clients
    from infra.relay import Relay, RelayLock, RelayState, chain_head
    settings, stop = ctx.settings, StopFlag()
    settings.home.mkdir(parents=True, exist_ok=True)
    state = RelayState(settings.home / f"relay-{settings.kafka_events_topic}.json")
    with RelayLock(settings.home / f"relay-{settings.kafka_events_topic}.lock"):
        if ctx.args.from_position is not None:
            state.save(*chain_head(ctx.catalog, ctx.args.from_position))

        def connect() -> Any:
            # Topics are (re)created on every connection: a broker that comes back empty must not
            # auto-create them with its own defaults (e.g. more partitions, losing the total order).
            kafka_clients.ensure_topics(settings)
            return kafka_clients.producer(settings)

        with follower_progress(ctx, f"relay to {settings.kafka_events_topic}", store_head(ctx)) as progress:
            relay = Relay(ctx.catalog, connect, settings.kafka_events_topic, state,
                          page_size=settings.relay_page_size, notify=notices(ctx.as_json), progress=progress,
                          ack_seconds=settings.kafka_ack_seconds)
            try:
                published = relay.run(ctx.args.follow, settings.kafka_retry_seconds,
                                      settings.follow_poll_seconds, should_stop=stop)
            except KeyboardInterrupt:
                published = 0
            finally:
                relay.close()
    position, _ = state.load()
    document = {"position": position, "published": published, "topic": settings.kafka_events_topic}
    return Reply(document, [f"relayed {published} events to {settings.kafka_events_topic}; "
                            f"relay position {position}"])


def watched_subject(ctx: Context) -> str:
    """The subject to watch, refused when malformed (usage) or, where this home holds the event store,
    unknown to it (unknown_subject). The store is asked, not the read model, which a running projector may
    hold locked; a downstream service without a store reads the topic alone and cannot tell."""
    from domain.subjects import parse_subject
    kind, name = parse_subject(ctx.args.subject)
    if ctx.settings.event_store_url or ctx.settings.event_store_path.exists():
        ctx.catalog.subject(ctx.args.subject)  # raises UnknownSubject
    return f"{kind}:{name}"


def cmd_watch(ctx: Context) -> Reply:
    """Prints each change as it comes: a line per changed tool for people; with --json one JSON line per
    change of the set ({"subject", "position", "changes"}; the first version always, an empty set with
    no changes), one {"subject", "position", "caught_up": true} line once the changelog was read up to
    its caught-up marker, flushed at once, and nothing at the end."""
    from infra import kafka_clients
    from consumers.watch import watch
    settings, stop, subject = ctx.settings, StopFlag(), watched_subject(ctx)
    kafka_clients.ensure_topics(settings)
    consumer = kafka_clients.consumer(settings, None)
    seen = 0

    def show(position: int, changes: list[dict[str, Any]]) -> None:
        nonlocal seen
        seen += 1
        if ctx.as_json:
            # ensure_ascii: as print_json, hidden characters travel as escapes
            sys.stdout.write(json.dumps({"subject": subject, "position": position, "changes": changes}) + "\n")
            sys.stdout.flush()
            return
        if not changes:  # a first version with no tools: published all the same
            print_text(f"@{position} {plain(subject)} has no tools")
        for change in changes:
            mark = {"added": "+", "removed": "-", "changed": "~"}[change["change"]]
            detail = (f"({plain(change['row']['provenance'])}, {change['row']['exposure']})" if "row" in change
                      else ", ".join(f"{k}: {plain(a)} → {plain(b)}" for k, (a, b) in change["fields"].items()))
            print_text(f"@{position} {mark} {plain(change['tool_id'])} {detail}")
        sys.stdout.flush()

    def caught_up(position: int) -> None:
        if ctx.as_json:
            sys.stdout.write(json.dumps({"subject": subject, "position": position, "caught_up": True}) + "\n")
        else:
            print_text(f"@{position} caught up: the changelog holds every set as of position {position}")
        sys.stdout.flush()

    try:
        watch(consumer, settings.kafka_effective_topic, subject, show, ctx.args.timeout, stop,
              ctx.args.from_position, caught_up)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    return Reply(None, [] if ctx.as_json else [f"watched {subject}: {seen} change(s) of its set"])
