"""The effective tool set as stories on the real SQLite file store and DuckDB read model.

Given some catalog commands, when the read model has caught up, then `effective_tools` holds, for each
subject, every tool once with the provenance of the highest tier (explicit > connector > platform >
image), the unit it was inherited from, and (agents only) its exposure (DESIGN.md section 3).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from domain.base import Meta
from domain.catalog import Catalog
from domain.errors import AlreadyBound, LegacyReferences, NotBound, UnknownConnector, UnknownGrant, UnknownSubject
from domain.naming import preset
from domain.values import ToolSpec
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.effective.reads import effective_rows, explain_rows
from projections.projector import Projector
from projections.rows import scalar, select_rows

# --- the story helper -------------------------------------------------------------------------------


def spec(source: str = "builtin", group: str = "core", **fields: Any) -> ToolSpec:
    return ToolSpec(source=source, group=group, tier="default", visibility="public", **fields)


class World:
    """A catalog on the SQLite file and its DuckDB read model; reads catch up first."""

    def __init__(self, settings: Settings, meta: Meta) -> None:
        self.catalog: Catalog = open_catalog(settings)
        self.con = open_read_model(settings)
        self.meta = meta

    def close(self) -> None:
        self.con.close()
        self.catalog.close()

    def __getattr__(self, command: str) -> Any:
        """`world.add_grant("agent:a", "x")` runs the catalog command with the world's meta."""
        method = getattr(self.catalog, command)
        return lambda *args: method(*args, self.meta)

    def tool(self, tool_id: str, **fields: Any) -> Any:
        return self.catalog.register_tool(tool_id, spec(**fields), self.meta)

    def catch_up(self) -> int:
        return catch_up(self.catalog, Projector(self.con)).position

    def rows(self, kind: str, name: str) -> list[dict[str, Any]]:
        self.catch_up()
        return select_rows(self.con, "SELECT * FROM effective_tools WHERE subject_kind = ? AND subject = ? "
                                     "ORDER BY tool_id", [kind, name])

    def tools(self, kind: str, name: str) -> dict[str, dict[str, Any]]:
        """The subject's effective set by tool ID; fails if a tool shows twice."""
        rows = self.rows(kind, name)
        ids = [r["tool_id"] for r in rows]
        assert len(ids) == len(set(ids)), f"a tool appears twice in {kind}:{name}: {ids}"
        return {r["tool_id"]: r for r in rows}

    def agent(self, name: str) -> dict[str, dict[str, Any]]:
        return self.tools("agent", name)

    def unit(self, name: str) -> dict[str, dict[str, Any]]:
        return self.tools("unit", name)

    def exposures(self, agent: str) -> dict[str, str]:
        return {tool_id: row["exposure"] for tool_id, row in self.agent(agent).items()}

    def tool_key(self, tool_id: str) -> str:
        self.catch_up()
        return scalar(self.con, "SELECT tool_key FROM tools WHERE canonical_id = ?", [tool_id])

    def explain(self, kind: str, name: str, tool_id: str) -> list[dict[str, Any]]:
        return explain_rows(self.con, (kind, name), self.tool_key(tool_id))

    def head(self) -> int:
        return self.catalog.recorder.max_notification_id() or 0


@pytest.fixture
def world(sqlite_settings: Settings, meta: Meta) -> Iterator[World]:
    opened = World(sqlite_settings, meta)
    yield opened
    opened.close()


@pytest.fixture
def sv(world: World) -> World:
    """A Spring-Voyage catalog: platform namespace `sv`, whose tools every subject gets."""
    world.init(preset("spring-voyage"))
    return world


@pytest.fixture
def tyrum(world: World) -> World:
    world.init(preset("tyrum"))
    return world


@contextmanager
def rejected(world: World, error: type[Exception], code: str) -> Iterator[Any]:
    """The command raises `error` with the stable `code`, and nothing at all is written."""
    before = world.head()
    with pytest.raises(error) as info:
        yield info
    assert info.value.code == code
    assert world.head() == before


def retire(world: World, alias: str, migrate: bool = True) -> int:
    """Walk a live alias through its whole deprecation window and retire it; the retirement position.
    With `migrate`, the catalog's own references to the alias are rewritten before step 2 (else step 2
    is refused while any remains).

    Needs release 1.0.0 published before the alias's tool was registered."""
    if world.catalog.owner_of(alias).aliases[alias].lifecycle == "alias":
        world.deprecate_alias(alias)
    world.publish_release("1.1.0")
    for milestone in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped"):
        world.record_milestone(alias, milestone, "1.1.0", f"{milestone} evidence")
    world.publish_release("1.2.0")
    world.record_milestone(alias, "alias_only_emission", "1.2.0", "metadata only")
    world.record_step(alias, 1, "only the canonical ID is documented")
    if migrate:
        world.migrate_alias(alias)
    world.record_step(alias, 2, "stored data migrated")
    world.publish_release("1.3.0")
    return world.retire_alias(alias, "1.3.0").position


# --- precedence of the four tiers ----------------------------------------------------------------

PROVENANCE = {"explicit": "explicit", "connector": "connector:ext", "platform": "platform", "image": "image"}
# No connector > platform pair: under spring-voyage no connector declares tools in `sv` (seed 002).
PAIRS = [("explicit", "connector"), ("explicit", "platform"), ("explicit", "image"),
         ("connector", "image"), ("platform", "image")]


def reach(world: World, tier: str, tool_id: str) -> None:
    """Make `tool_id` (already registered) reach agent `a` in unit `team` by one tier."""
    if tier == "explicit":
        world.add_grant("agent:a", tool_id)
    elif tier == "connector":
        world.register_connector("ext", tool_id.rpartition(".")[0], [tool_id])
        world.bind_connector("ext", "team")
    elif tier == "image":
        world.declare_image("a", "registry/a:1", [tool_id])
    # platform: the tool lives in `sv`, so it reaches every subject by being registered


@pytest.mark.parametrize("lower_first", [True, False], ids=["lower-tier-first", "higher-tier-first"])
@pytest.mark.parametrize(("higher", "lower"), PAIRS, ids=[f"{h}>{lo}" for h, lo in PAIRS])
def test_given_a_tool_reaching_the_agent_by_two_tiers_when_projected_then_the_higher_tier_wins_once(
        sv: World, higher: str, lower: str, lower_first: bool) -> None:
    tool_id = "sv.ext.fetch" if "platform" in (higher, lower) else "ext.fetch"
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    sv.tool(tool_id)
    for tier in ((lower, higher) if lower_first else (higher, lower)):
        reach(sv, tier, tool_id)

    rows = [r for r in sv.rows("agent", "a") if r["tool_id"] == tool_id]

    assert len(rows) == 1
    assert rows[0]["provenance"] == PROVENANCE[higher]
    assert rows[0]["exposure"] == "enabled"
    ways = sv.explain("agent", "a", tool_id)
    assert [(w["place"], w["provenance"]) for w in ways] == [(1, PROVENANCE[higher]), (2, PROVENANCE[lower])]


def test_given_each_tier_alone_when_projected_then_the_row_names_that_tier(sv: World) -> None:
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    for tool_id in ("ext.fetch", "sv.runtime.echo", "plain.one", "img.only"):
        sv.tool(tool_id)
    sv.add_grant("agent:a", "plain.one")
    reach(sv, "connector", "ext.fetch")
    sv.declare_image("a", "registry/a:1", ["img.only"])

    assert {t: r["provenance"] for t, r in sv.agent("a").items()} == {
        "ext.fetch": "connector:ext", "img.only": "image", "plain.one": "explicit", "sv.runtime.echo": "platform"}
    # the unit sees the connector and the platform, never the agent's own grant or image
    assert {t: r["provenance"] for t, r in sv.unit("team").items()} == {
        "ext.fetch": "connector:ext", "sv.runtime.echo": "platform"}


# --- inheritance through two levels of units ----------------------------------------------------------


@pytest.fixture
def org_tree(sv: World) -> World:
    """org > research > agent `scout`."""
    sv.create_unit("org", None)
    sv.create_unit("research", "org")
    sv.create_agent("scout", "research", "stateful")
    return sv


def test_given_an_explicit_grant_on_the_root_unit_when_projected_then_every_descendant_inherits_it_from_org(
        org_tree: World) -> None:
    org_tree.tool("notes.search")
    org_tree.add_grant("unit:org", "notes.search")

    assert org_tree.agent("scout")["notes.search"]["provenance"] == "explicit"
    assert org_tree.agent("scout")["notes.search"]["inherited_from"] == "org"
    assert org_tree.unit("research")["notes.search"]["inherited_from"] == "org"
    assert org_tree.unit("org")["notes.search"]["inherited_from"] is None
    assert org_tree.unit("org")["notes.search"]["exposure"] is None


def test_given_a_connector_bound_to_the_root_unit_when_projected_then_the_agent_inherits_it_from_org(
        org_tree: World) -> None:
    org_tree.register_connector("arxiv", None, ["arxiv.search", "arxiv.fetch"])
    org_tree.bind_connector("arxiv", "org")

    for tool_id in ("arxiv.search", "arxiv.fetch"):
        row = org_tree.agent("scout")[tool_id]
        assert (row["provenance"], row["inherited_from"]) == ("connector:arxiv", "org")
        assert org_tree.unit("research")[tool_id]["inherited_from"] == "org"
        assert org_tree.unit("org")[tool_id]["inherited_from"] is None


def test_given_the_same_tool_granted_on_the_agent_and_on_its_units_when_projected_then_the_nearer_grant_wins(
        org_tree: World) -> None:
    org_tree.tool("notes.search")
    org_tree.tool("notes.write")
    org_tree.add_grant("unit:org", "notes.search")
    org_tree.add_grant("agent:scout", "notes.search")
    org_tree.add_grant("unit:org", "notes.write")
    org_tree.add_grant("unit:research", "notes.write")

    scout = org_tree.agent("scout")
    assert (scout["notes.search"]["provenance"], scout["notes.search"]["inherited_from"]) == ("explicit", None)
    assert scout["notes.write"]["inherited_from"] == "research"
    assert org_tree.unit("research")["notes.write"]["inherited_from"] is None
    ways = org_tree.explain("agent", "scout", "notes.search")
    assert [(w["place"], w["inherited_from"]) for w in ways] == [(1, None), (2, "org")]


def test_given_a_connector_bound_on_two_levels_when_unbound_from_the_nearer_then_the_farther_binding_shows(
        org_tree: World) -> None:
    org_tree.register_connector("arxiv", None, ["arxiv.search"])
    org_tree.bind_connector("arxiv", "org")
    org_tree.bind_connector("arxiv", "research")
    assert org_tree.agent("scout")["arxiv.search"]["inherited_from"] == "research"

    org_tree.unbind_connector("arxiv", "research")

    row = org_tree.agent("scout")["arxiv.search"]
    assert (row["provenance"], row["inherited_from"]) == ("connector:arxiv", "org")
    assert org_tree.unit("research")["arxiv.search"]["inherited_from"] == "org"
    org_tree.unbind_connector("arxiv", "org")
    assert "arxiv.search" not in org_tree.agent("scout")


def test_given_a_unit_outside_the_tree_when_projected_then_it_inherits_nothing_from_it(org_tree: World) -> None:
    org_tree.create_unit("ops", None)
    org_tree.tool("notes.search")
    org_tree.add_grant("unit:ops", "notes.search")

    assert "notes.search" not in org_tree.agent("scout")
    assert "notes.search" not in org_tree.unit("org")
    assert "notes.search" in org_tree.unit("ops")


# --- binding, unbinding, and rejections --------------------------------------------------------------


@pytest.fixture
def bound(sv: World) -> World:
    """Unit `team` with agent `a`; connector `arxiv` (arxiv.search, arxiv.fetch) registered, not bound."""
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    sv.tool("sv.runtime.echo")
    sv.register_connector("arxiv", None, ["arxiv.search", "arxiv.fetch"])
    return sv


def test_given_a_bound_connector_when_unbound_then_exactly_what_binding_granted_is_revoked(bound: World) -> None:
    bound.add_grant("unit:team", "arxiv.search")
    before_bind = {kind: bound.rows(kind, name) for kind, name in (("agent", "a"), ("unit", "team"))}
    bound.bind_connector("arxiv", "team")
    bound_rows = {kind: bound.rows(kind, name) for kind, name in (("agent", "a"), ("unit", "team"))}
    assert set(bound.agent("a")) == {"arxiv.fetch", "arxiv.search", "sv.runtime.echo"}
    # the explicit grant outranks the connector: the connector only shadows it
    assert [w["provenance"] for w in bound.explain("agent", "a", "arxiv.search")] == ["explicit", "connector:arxiv"]

    bound.unbind_connector("arxiv", "team")

    after = {kind: bound.rows(kind, name) for kind, name in (("agent", "a"), ("unit", "team"))}
    assert after == before_bind
    assert "arxiv.fetch" not in bound.agent("a")
    search = bound.agent("a")["arxiv.search"]
    assert (search["provenance"], search["inherited_from"]) == ("explicit", "team")
    assert [w["provenance"] for w in bound.explain("agent", "a", "arxiv.search")] == ["explicit"]

    bound.bind_connector("arxiv", "team")  # rebinding restores what binding gave
    assert {kind: bound.rows(kind, name) for kind, name in (("agent", "a"), ("unit", "team"))} == bound_rows


def test_given_a_connector_only_grant_when_unbound_then_the_tools_leave_the_set(bound: World) -> None:
    bound.bind_connector("arxiv", "team")
    assert bound.agent("a")["arxiv.fetch"]["provenance"] == "connector:arxiv"

    bound.unbind_connector("arxiv", "team")

    assert set(bound.agent("a")) == {"sv.runtime.echo"}
    assert set(bound.unit("team")) == {"sv.runtime.echo"}


def test_given_a_bound_connector_when_bound_again_then_already_bound_and_nothing_written(bound: World) -> None:
    bound.bind_connector("arxiv", "team")
    with rejected(bound, AlreadyBound, "already_bound"):
        bound.bind_connector("arxiv", "team")


def test_given_an_unbound_connector_when_unbound_then_not_bound_and_nothing_written(bound: World) -> None:
    with rejected(bound, NotBound, "not_bound"):
        bound.unbind_connector("arxiv", "team")
    bound.bind_connector("arxiv", "team")
    bound.unbind_connector("arxiv", "team")
    with rejected(bound, NotBound, "not_bound"):
        bound.unbind_connector("arxiv", "team")


def test_given_an_unknown_connector_when_bound_or_unbound_then_unknown_connector(bound: World) -> None:
    with rejected(bound, UnknownConnector, "unknown_connector"):
        bound.bind_connector("nosuch", "team")
    with rejected(bound, UnknownConnector, "unknown_connector"):
        bound.unbind_connector("nosuch", "team")


@pytest.mark.parametrize("command", [
    lambda w: w.bind_connector("arxiv", "ghost"),
    lambda w: w.unbind_connector("arxiv", "ghost"),
    lambda w: w.add_grant("unit:ghost", "sv.runtime.echo"),
    lambda w: w.add_grant("agent:ghost", "sv.runtime.echo"),
    lambda w: w.revoke_grant("agent:ghost", "sv.runtime.echo"),
    lambda w: w.create_agent("b", "ghost", "stateful"),
    lambda w: w.create_unit("child", "ghost"),
    lambda w: w.declare_image("ghost", "registry/g:1", ["sv.runtime.echo"]),
    lambda w: w.set_allowlist("ghost", ["sv.runtime.echo"]),
], ids=["bind", "unbind", "grant-unit", "grant-agent", "revoke", "agent-in-unit", "unit-parent", "image",
        "allowlist"])
def test_given_an_unknown_subject_when_commanded_then_unknown_subject_and_nothing_written(
        bound: World, command: Any) -> None:
    with rejected(bound, UnknownSubject, "unknown_subject"):
        command(bound)


def test_given_no_such_grant_when_revoked_then_unknown_grant_and_nothing_written(bound: World) -> None:
    with rejected(bound, UnknownGrant, "unknown_grant"):
        bound.revoke_grant("agent:a", "sv.runtime.echo")  # never granted on a subject without any grant
    bound.add_grant("agent:a", "arxiv.search")
    with rejected(bound, UnknownGrant, "unknown_grant"):
        bound.revoke_grant("agent:a", "arxiv.fetch")
    with rejected(bound, UnknownGrant, "unknown_grant"):
        bound.revoke_grant("unit:team", "arxiv.search")  # granted on the agent, not the unit
    with rejected(bound, UnknownGrant, "unknown_grant"):
        bound.revoke_grant("agent:a", "arxiv.*")
    bound.revoke_grant("agent:a", "arxiv.search")
    with rejected(bound, UnknownGrant, "unknown_grant"):
        bound.revoke_grant("agent:a", "arxiv.search")


def test_given_a_grant_when_revoked_then_the_tool_leaves_the_set(bound: World) -> None:
    bound.add_grant("agent:a", "arxiv.search")
    assert bound.agent("a")["arxiv.search"]["provenance"] == "explicit"

    bound.revoke_grant("agent:a", "arxiv.search")

    assert set(bound.agent("a")) == {"sv.runtime.echo"}


# --- images --------------------------------------------------------------------------------------------


def test_given_a_declared_image_when_a_new_image_is_declared_then_its_tools_replace_the_old_ones(sv: World) -> None:
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    sv.create_agent("b", "team", "stateful")
    sv.declare_image("a", "registry/a:1", ["img.alpha", "img.beta"])
    assert {t: r["provenance"] for t, r in sv.agent("a").items()} == {"img.alpha": "image", "img.beta": "image"}

    sv.declare_image("a", "registry/a:2", ["img.beta", "img.gamma"])

    assert {t: r["provenance"] for t, r in sv.agent("a").items()} == {"img.beta": "image", "img.gamma": "image"}
    assert sv.agent("b") == {}  # an image declares tools 1:1 for its agent only
    assert sv.unit("team") == {}

    sv.declare_image("a", "registry/a:3", [])
    assert sv.agent("a") == {}


# --- namespace grants ------------------------------------------------------------------------------------


def test_given_a_namespace_grant_when_tools_are_registered_later_then_the_grant_covers_them(sv: World) -> None:
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    sv.tool("acme.early")
    sv.add_grant("unit:team", "acme.*")
    assert set(sv.agent("a")) == {"acme.early"}

    sv.tool("acme.notes.search")
    sv.tool("acme.late")
    sv.tool("acmex.other")  # shares the prefix text, not the namespace

    assert set(sv.agent("a")) == {"acme.early", "acme.late", "acme.notes.search"}
    assert {r["provenance"] for r in sv.agent("a").values()} == {"explicit"}
    assert {r["inherited_from"] for r in sv.agent("a").values()} == {"team"}
    assert set(sv.unit("team")) == {"acme.early", "acme.late", "acme.notes.search"}

    sv.revoke_grant("unit:team", "acme.*")
    assert sv.agent("a") == {}


# --- exposure --------------------------------------------------------------------------------------------


@pytest.fixture
def exposed(sv: World) -> World:
    """Agent `a` (stateless) in unit `team`, granted five tools through the unit."""
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateless")
    sv.tool("x.bad_schema", input_schema={"type": "strng"})
    sv.tool("x.stateful", requires_state=True)
    sv.tool("x.fine", input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
    sv.tool("x.other")
    sv.tool("x.both", input_schema={"type": "object", "required": "q"}, requires_state=True)
    sv.add_grant("unit:team", "x.*")
    return sv


def test_given_an_agent_without_allowlist_when_projected_then_each_exposure_state_is_reported(
        exposed: World) -> None:
    assert exposed.exposures("a") == {
        "x.bad_schema": "disabled_invalid_schema", "x.stateful": "disabled_by_state_mode",
        "x.fine": "enabled", "x.other": "enabled",
        "x.both": "disabled_invalid_schema"}
    assert {r["exposure"] for r in exposed.unit("team").values()} == {None}


def test_given_an_allowlist_when_projected_then_tools_outside_it_are_disabled_by_the_agent_allowlist(
        exposed: World) -> None:
    exposed.set_allowlist("a", ["x.fine"])

    assert exposed.exposures("a") == {
        "x.bad_schema": "disabled_invalid_schema",      # the schema check comes first …
        "x.stateful": "disabled_by_state_mode",         # … then the state mode …
        "x.fine": "enabled",
        "x.other": "disabled_by_agent_allowlist",       # … then the allowlist
        "x.both": "disabled_invalid_schema"}
    assert {r["exposure"] for r in exposed.unit("team").values()} == {None}


def test_given_a_stateful_agent_when_projected_then_state_requiring_tools_are_enabled(exposed: World) -> None:
    exposed.create_agent("keeper", "team", "stateful")

    assert exposed.exposures("keeper")["x.stateful"] == "enabled"
    assert exposed.exposures("keeper")["x.bad_schema"] == "disabled_invalid_schema"
    assert exposed.exposures("keeper")["x.both"] == "disabled_invalid_schema"


def test_given_an_allowlist_covering_everything_when_projected_then_only_schema_and_state_disable(
        exposed: World) -> None:
    exposed.set_allowlist("a", ["x.*"])
    assert exposed.exposures("a") == {
        "x.bad_schema": "disabled_invalid_schema", "x.stateful": "disabled_by_state_mode",
        "x.fine": "enabled", "x.other": "enabled", "x.both": "disabled_invalid_schema"}
    exposed.set_allowlist("a", ["*"])
    assert exposed.exposures("a")["x.other"] == "enabled"


# --- allowlist normalization (tyrum) -----------------------------------------------------------------------

FS = ["read", "write", "edit", "apply_patch", "glob", "grep"]


@pytest.fixture
def tyrum_agent(tyrum: World) -> World:
    """Tyrum catalog: the filesystem built-ins, bash and memory.seed (with the deprecated alias
    mcp.memory.seed and the shim tool.fs.read), all granted to agent `a` through its unit."""
    tyrum.publish_release("1.0.0")
    tyrum.create_unit("team", None)
    tyrum.create_agent("a", "team", "stateful")
    for tool_id in [*FS, "bash"]:
        tyrum.tool(tool_id)
        tyrum.add_grant("unit:team", tool_id)
    tyrum.tool("memory.seed", group="memory")
    tyrum.add_grant("unit:team", "memory.seed")
    tyrum.add_alias("memory.seed", "mcp.memory.seed", False)
    tyrum.deprecate_alias("mcp.memory.seed")
    tyrum.add_alias("read", "tool.fs.read", True)
    return tyrum


def enabled(world: World, agent: str = "a") -> set[str]:
    return {tool_id for tool_id, exposure in world.exposures(agent).items() if exposure == "enabled"}


def test_given_an_allowlist_naming_a_deprecated_alias_when_projected_then_the_canonical_tool_is_enabled(
        tyrum_agent: World) -> None:
    tyrum_agent.set_allowlist("a", ["mcp.memory.seed"])

    assert enabled(tyrum_agent) == {"memory.seed"}
    assert tyrum_agent.exposures("a")["bash"] == "disabled_by_agent_allowlist"
    assert "mcp.memory.seed" not in tyrum_agent.agent("a")


def test_given_the_fs_pattern_shim_when_projected_then_filesystem_builtins_are_enabled_but_not_bash(
        tyrum_agent: World) -> None:
    tyrum_agent.set_allowlist("a", ["tool.fs.*"])

    assert enabled(tyrum_agent) == set(FS)
    assert tyrum_agent.exposures("a")["bash"] == "disabled_by_agent_allowlist"
    assert tyrum_agent.exposures("a")["memory.seed"] == "disabled_by_agent_allowlist"


def test_given_the_tool_star_shim_when_projected_then_everything_is_enabled(tyrum_agent: World) -> None:
    tyrum_agent.set_allowlist("a", ["tool.*"])

    assert enabled(tyrum_agent) == {*FS, "bash", "memory.seed"}


def test_given_a_shim_alias_in_the_allowlist_when_projected_then_its_canonical_tool_is_enabled(
        tyrum_agent: World) -> None:
    tyrum_agent.set_allowlist("a", ["tool.fs.read"])

    assert enabled(tyrum_agent) == {"read"}
    assert "tool.fs.read" not in tyrum_agent.agent("a")


@pytest.mark.parametrize(("alias", "canonical"), [("mcp.memory.seed", "memory.seed"), ("tool.fs.read", "read")])
def test_given_an_allowlist_naming_an_alias_when_its_retirement_skips_the_migration_then_step_2_is_refused(
        tyrum_agent: World, alias: str, canonical: str) -> None:
    tyrum_agent.set_allowlist("a", [alias, "bash"])
    assert enabled(tyrum_agent) == {canonical, "bash"}

    with pytest.raises(LegacyReferences) as info:
        retire(tyrum_agent, alias, migrate=False)

    assert info.value.details["references"] == [{"kind": "allowlist", "holder": "agent:a"}]
    assert enabled(tyrum_agent) == {canonical, "bash"}  # the tool is not silently lost


@pytest.mark.parametrize(("alias", "canonical"), [("mcp.memory.seed", "memory.seed"), ("tool.fs.read", "read")])
def test_given_an_allowlist_naming_an_alias_when_migrated_and_retired_then_it_still_enables_the_tool(
        tyrum_agent: World, alias: str, canonical: str) -> None:
    tyrum_agent.set_allowlist("a", [alias, "bash"])

    retire(tyrum_agent, alias)

    assert tyrum_agent.catalog.agent("a").allowlist == [canonical, "bash"]
    assert enabled(tyrum_agent) == {canonical, "bash"}


def test_given_an_allowlist_when_cleared_then_everything_is_enabled_again(tyrum_agent: World) -> None:
    tyrum_agent.set_allowlist("a", ["bash"])
    assert enabled(tyrum_agent) == {"bash"}

    tyrum_agent.clear_allowlist("a")

    assert enabled(tyrum_agent) == {*FS, "bash", "memory.seed"}
    before = tyrum_agent.head()
    tyrum_agent.clear_allowlist("a")  # clearing no allowlist writes nothing
    assert tyrum_agent.head() == before


# --- aliases never appear ------------------------------------------------------------------------------------


def test_given_a_grant_through_an_alias_when_projected_then_the_row_shows_the_canonical_id(sv: World) -> None:
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    sv.tool("arxiv.search")
    sv.add_alias("arxiv.search", "arxiv_search", False)

    sv.add_grant("agent:a", "arxiv_search")

    assert set(sv.agent("a")) == {"arxiv.search"}
    assert select_rows(sv.con, "SELECT target FROM grants") == [{"target": "arxiv.search"}]


def test_given_a_granted_tool_when_renamed_then_the_effective_set_shows_the_new_canonical_id(sv: World) -> None:
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    sv.tool("arxiv.search")
    sv.add_grant("agent:a", "arxiv.search")
    sv.add_grant("unit:team", "arxiv.search")
    key = sv.tool_key("arxiv.search")

    sv.rename_tool("arxiv.search", "arxiv.find")

    assert set(sv.agent("a")) == {"arxiv.find"}
    assert sv.agent("a")["arxiv.find"]["tool_key"] == key
    assert set(sv.unit("team")) == {"arxiv.find"}
    aliases = {r["alias"] for r in select_rows(sv.con, "SELECT alias FROM aliases")}
    assert aliases == {"arxiv.search"}
    assert not aliases & {r["tool_id"] for r in select_rows(sv.con, "SELECT tool_id FROM effective_tools")}
    # the old ID still names the grant: revoking through it works
    sv.revoke_grant("agent:a", "arxiv.search")
    assert set(sv.agent("a")) == {"arxiv.find"}
    assert sv.agent("a")["arxiv.find"]["inherited_from"] == "team"


def test_given_an_allowlist_naming_a_tool_when_the_tool_is_renamed_then_the_old_id_still_enables_it(
        sv: World) -> None:
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    sv.tool("web.search")
    sv.tool("web.fetch")
    sv.add_grant("unit:team", "web.*")
    sv.set_allowlist("a", ["web.search"])

    sv.rename_tool("web.search", "web.find")

    assert sv.exposures("a") == {"web.find": "enabled", "web.fetch": "disabled_by_agent_allowlist"}


# --- explain ---------------------------------------------------------------------------------------------------


def test_given_a_tool_reaching_the_agent_four_ways_when_explained_then_the_winner_is_first_and_the_rest_follow(
        sv: World) -> None:
    # A platform tool reaches no subject through a connector (no connector declares tools in `sv`); the
    # connector tier's place among the others is told by the pairs above.
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    registered = sv.tool("sv.ext.fetch")
    platform_at = next(e.position for e in registered.events if e.type == "Tool.Registered")
    image_at = sv.declare_image("a", "registry/a:1", ["sv.ext.fetch"]).position
    unit_grant_at = sv.add_grant("unit:team", "sv.ext.fetch").position
    agent_grant_at = sv.add_grant("agent:a", "sv.ext.fetch").position

    ways = sv.explain("agent", "a", "sv.ext.fetch")

    assert [(w["place"], w["provenance"], w["inherited_from"], w["position"]) for w in ways] == [
        (1, "explicit", None, agent_grant_at),
        (2, "explicit", "team", unit_grant_at),
        (3, "platform", None, platform_at),
        (4, "image", None, image_at),
    ]
    assert {w["tool_id"] for w in ways} == {"sv.ext.fetch"}
    winner = sv.agent("a")["sv.ext.fetch"]
    assert (winner["provenance"], winner["inherited_from"]) == (ways[0]["provenance"], ways[0]["inherited_from"])
    assert ways[0]["cause"] == "grant sv.ext.fetch on agent:a"

    sv.revoke_grant("agent:a", "sv.ext.fetch")
    ways = sv.explain("agent", "a", "sv.ext.fetch")
    assert [(w["place"], w["provenance"]) for w in ways] == [(1, "explicit"), (2, "platform"), (3, "image")]
    # as of before the revocation the agent's own grant still wins
    before = explain_rows(sv.con, ("agent", "a"), sv.tool_key("sv.ext.fetch"), at=agent_grant_at)
    assert before[0]["position"] == agent_grant_at and len(before) == 4


def test_given_a_tool_the_subject_does_not_see_when_explained_then_there_is_no_way(sv: World) -> None:
    sv.create_unit("team", None)
    sv.create_agent("a", "team", "stateful")
    sv.tool("plain.tool")

    assert sv.explain("agent", "a", "plain.tool") == []
    assert effective_rows(sv.con, [("agent", "a")]) == []
