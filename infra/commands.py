"""Handlers of the catalog's write commands: parse the arguments, call one use case, answer."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from domain.errors import InvalidSchema, UsageError
from domain.naming import PRESETS, policy_from_json, preset
from domain.values import ToolSpec
from infra.context import Context
from infra.render import describe_write, print_json, print_text


def read_text_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as error:
        raise UsageError(f"cannot read {what} {path}: {error.strerror or error}", path=path) from error


def answer(ctx: Context, result: Any) -> int:
    document = ctx.write_answer(result)
    print_json(document) if ctx.as_json else print_text(describe_write(document))
    return 0


def cmd_init(ctx: Context) -> int:
    name = ctx.args.policy
    policy = preset(name) if name in PRESETS else policy_from_json(read_text_file(name, "the policy file"))
    return answer(ctx, ctx.catalog.init(policy, ctx.meta()))


def cmd_release_publish(ctx: Context) -> int:
    return answer(ctx, ctx.catalog.publish_release(ctx.args.version, ctx.meta()))


def load_schema(path: str | None) -> Any:
    if path is None:
        return None
    text = read_text_file(path, "the schema file")
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidSchema(f"{path} is not JSON: {error}", path=path) from error


def tool_spec(args: Any) -> ToolSpec:
    try:
        return ToolSpec(source=args.source, group=args.group, tier=args.tier, visibility=args.visibility,
                        family=args.family, plugin=args.plugin, backing_server=args.backing_server,
                        description=args.description, classes=args.classes or [], risk=args.risk,
                        input_schema=load_schema(args.schema), requires_state=args.requires_state)
    except ValidationError as error:
        problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in error.errors())
        raise UsageError(f"invalid tool description: {problems}") from error


def cmd_tool_register(ctx: Context) -> int:
    return answer(ctx, ctx.catalog.register_tool(ctx.args.id, tool_spec(ctx.args), ctx.meta()))


def cmd_tool_rename(ctx: Context) -> int:
    return answer(ctx, ctx.catalog.rename_tool(ctx.args.old, ctx.args.new, ctx.meta()))


def cmd_alias_add(ctx: Context) -> int:
    return answer(ctx, ctx.catalog.add_alias(ctx.args.canonical, ctx.args.alias, ctx.args.shim, ctx.meta()))


def cmd_alias_deprecate(ctx: Context) -> int:
    return answer(ctx, ctx.catalog.deprecate_alias(ctx.args.alias, ctx.meta()))


def cmd_alias_milestone(ctx: Context) -> int:
    a = ctx.args
    return answer(ctx, ctx.catalog.record_milestone(a.alias, a.milestone, a.release, a.evidence, ctx.meta()))


def cmd_alias_step(ctx: Context) -> int:
    a = ctx.args
    if not a.evidence.strip():
        raise UsageError("--evidence must say what confirms the step")
    return answer(ctx, ctx.catalog.record_step(a.alias, a.step, a.evidence, ctx.meta()))


def cmd_alias_retire(ctx: Context) -> int:
    return answer(ctx, ctx.catalog.retire_alias(ctx.args.alias, ctx.args.release, ctx.meta()))
