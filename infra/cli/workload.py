"""`toolcat workload`: writes the seeded benchmark history (infra/dev/workload.py) into an empty home, with
exactly the number of events asked for, so anyone can time `rebuild`, `audit replay` or `project` on it."""
from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from domain.errors import UsageError
from infra.cli.output import Reply, notices
from infra.cli.registry import Commands

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("workload", cmd_workload, "write the seeded benchmark history into an empty home", "pipeline")
    p.add_argument("--events", type=int, required=True, metavar="N",
                   help="how many events to write (exactly; the last command may add one more)")
    p.add_argument("--seed", type=int, default=7, help="the random seed (default 7: the bench's history)")


def cmd_workload(ctx: Context) -> Reply:
    from infra.wiring import open_catalog
    from infra.dev.workload import FEWEST_EVENTS, Shape, Workload
    wanted = ctx.args.events
    if wanted < FEWEST_EVENTS:
        raise UsageError(f"--events takes at least {FEWEST_EVENTS} (the workload's catalog alone takes about "
                         f"that many), not {wanted}")
    catalog = open_catalog(ctx.settings)
    try:
        held = catalog.recorder.max_notification_id() or 0
        if held:
            raise UsageError(f"the event store of {ctx.settings.home} already holds {held} events; the workload "
                             "is written into an empty home (choose another --home)", events=held)
        say = notices(ctx.as_json)
        workload = Workload(catalog, Shape.for_events(wanted), seed=ctx.args.seed,
                            progress=lambda saved: say(f"{saved} events written"))
        try:
            written = workload.run(events=wanted)
        except ValueError as error:  # raised before its first save: nothing was written
            raise UsageError(f"--events {wanted} is too few: {error}") from error
        head = catalog.recorder.max_notification_id() or 0
    finally:
        catalog.close()
    return Reply({"events": written, "position": head, "home": str(ctx.settings.home)},
                 [f"wrote {written} events into {ctx.settings.home} (position {head}); time it with e.g. "
                  f"/usr/bin/time -v toolcat --home {shlex.quote(str(ctx.settings.home))} rebuild"])
