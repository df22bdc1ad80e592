"""The development commands: `dev-broker` (a local Kafka-compatible broker), `bench` (the performance
figures) and `demo` (the bundled examples, end to end). Their machinery lives in `infra/dev/`."""
from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from domain.errors import UsageError
from infra.hints import command
from infra.cli.output import Reply, notices, print_text, stdout_kept_for_the_answer
from infra.cli.registry import Commands
from infra.signals import StopFlag

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    commands.add("dev-broker", cmd_dev_broker, "run a local Kafka-compatible broker", "pipeline") \
        .add_argument("--port", type=int, default=9092, help="the port to listen on (default 9092)")
    p = commands.add("bench", cmd_bench, "measure the performance budget: a table of each figure against its "
                     "target (--json: every figure in full)", "pipeline")
    p.add_argument("--events", type=int, default=20000,
                   help="how many events to generate for the figures (default 20000)")
    p.add_argument("--only", metavar="NAME[,NAME…]", help="only these figures")
    p.add_argument("--strict", action="store_true",
                   help="exit 8 when a measured figure misses its budget target (for CI)")
    p.add_argument("--kafka-client", choices=("kafka-python", "confluent"),
                   help="the Kafka client library of the Kafka figures (default: TOOLCAT_KAFKA_CLIENT)")
    commands.add("demo", cmd_demo, "build the example catalogs and walk through them", "pipeline") \
        .add_argument("--kafka", action="store_true", help="start the dev broker and stream through Kafka too")


def cmd_dev_broker(ctx: Context) -> Reply:
    """Runs until Ctrl-C or SIGTERM; it has no JSON form (it prints the same lines either way)."""
    from infra.dev.broker import DevBroker
    broker = DevBroker(ctx.args.port).start()
    stop = StopFlag()
    print_text(f"Kafka-compatible dev broker (Tansu, memory storage) listening on {broker.bootstrap}\n"
               f"export TOOLCAT_KAFKA_BOOTSTRAP={broker.bootstrap}    # Ctrl-C stops it; nothing is kept")
    sys.stdout.flush()
    try:
        while not stop() and broker.process is not None and broker.process.poll() is None:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        broker.stop()
    return Reply(None, ["dev broker stopped"])


def cmd_bench(ctx: Context) -> Reply:
    from infra.dev.bench import FIGURES, run_bench
    from infra.dev.bench_report import bench_summary
    from infra.dev.workload import FEWEST_EVENTS
    if ctx.args.events < FEWEST_EVENTS:
        raise UsageError(f"--events takes at least {FEWEST_EVENTS}, not {ctx.args.events}")
    if ctx.args.only and not set(ctx.args.only.split(",")) <= set(FIGURES):
        raise UsageError(f"--only takes some of {', '.join(FIGURES)}, separated by commas")
    settings = ctx.settings
    if ctx.args.kafka_client:
        settings = settings.model_copy(update={"kafka_client": ctx.args.kafka_client})
    # Its stages run in child processes and in libraries for minutes: none of them may write into the
    # one --json document (CONTRACT.md).
    with stdout_kept_for_the_answer():
        document = run_bench(ctx.args.events, ctx.args.only, settings, notices(ctx.as_json))
    human, exit_code = bench_summary(document, ctx.args.strict)
    return Reply(document, human, exit_code)


def cmd_demo(ctx: Context) -> Reply:
    from infra.dev.demo import run_demo
    document = run_demo(ctx.settings, ctx.args.kafka, quiet=ctx.as_json)
    explore = command("tool", "list", home=str(ctx.settings.home / "tyrum"))
    return Reply(document, [f"\nDone. Explore: {explore}"])
