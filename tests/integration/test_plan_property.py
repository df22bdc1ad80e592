"""The property behind `plan`/`apply`: for random manifests, planning then applying gives a catalog whose
export is the manifest, and the effective-set changes the plan predicted are the ones the apply caused.

Each example builds a catalog from one manifest, then moves it to a second one over the same subjects and
tools (other grants, bindings, allowlists and images), so gains, losses and changes of provenance and
exposure all occur."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import duckdb
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from domain.manifest import Manifest
from projections.scratch import effective_sets, set_changes
from tests.support import ok, toolcat_environ, toolcat_in_process

BUILTINS = ["read", "write", "grep", "glob", "bash"]
CONNECTOR_TOOLS = {"gh": ["gh.issue", "gh.pull"], "web": ["web.search"]}
IMAGE_TOOLS = ["img.alpha", "img.beta"]
UNITS = {"acme": None, "eng": "acme", "ops": "acme"}
TARGETS = BUILTINS + [t for tools in CONNECTOR_TOOLS.values() for t in tools] + ["gh.*", "web.*"]


def tool(source: str, requires_state: bool = False) -> dict[str, Any]:
    if source == "builtin":
        return {"source": source, "group": "core", "tier": "default", "visibility": "public",
                "requires_state": requires_state}
    return {"source": source, "group": "extension", "tier": "advanced", "visibility": "public"}


def subset(items: list[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(items), unique=True, max_size=3)


@st.composite
def structures(draw: Any) -> dict[str, Any]:
    """What stays: the policy, tools, connectors, units and agents."""
    stateful = draw(st.sets(st.sampled_from(BUILTINS), max_size=2))
    agents = {name: {"unit": draw(st.sampled_from(list(UNITS))),
                     "state_mode": draw(st.sampled_from(["stateful", "stateless"]))}
              for name in draw(st.sets(st.sampled_from(["triage", "coder"]), min_size=1))}
    return {"policy": "tyrum",
            "tools": {t: tool("builtin", t in stateful) for t in BUILTINS}
            | {t: tool("connector") for tools in CONNECTOR_TOOLS.values() for t in tools}
            | {t: tool("image") for t in IMAGE_TOOLS},
            "connectors": {slug: {"tools": tools} for slug, tools in CONNECTOR_TOOLS.items()},
            "units": {name: ({"parent": parent} if parent else {}) for name, parent in UNITS.items()},
            "agents": agents}


@st.composite
def assignments(draw: Any, structure: dict[str, Any]) -> dict[str, Any]:
    """What a plan moves: grants, bindings, allowlists and images, over the structure's subjects."""
    manifest = yaml.safe_load(yaml.safe_dump(structure))
    for unit in manifest["units"].values():
        unit["connectors"] = draw(subset(list(CONNECTOR_TOOLS)))
        unit["grants"] = draw(subset(TARGETS))
    for agent in manifest["agents"].values():
        agent["grants"] = draw(subset(TARGETS))
        agent["allowlist"] = draw(st.none() | st.lists(st.sampled_from(TARGETS), unique=True, min_size=1,
                                                       max_size=3))
        agent["image"] = {"ref": f"acme/agent:{draw(st.integers(1, 3))}", "tools": draw(
            st.lists(st.sampled_from(IMAGE_TOOLS), unique=True, min_size=1))}
    return manifest


@st.composite
def two_manifests(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    structure = draw(structures())
    return draw(assignments(structure)), draw(assignments(structure))


def sets_of(home: Path) -> dict[str, Any]:
    with duckdb.connect(str(home / "catalog.duckdb"), read_only=True) as con:
        return effective_sets(con)


def plan_and_apply(home: Path, manifest: dict[str, Any]) -> None:
    path = home.parent / "manifest.yaml"
    path.write_text(yaml.safe_dump(manifest))
    before = sets_of(home) if (home / "catalog.duckdb").exists() else {}
    planned = ok(toolcat_in_process(home, "plan", str(path), "--json"))
    assert planned["violations"] == []
    if planned["commands"]:  # an empty plan is not held: there is nothing to apply
        ok(toolcat_in_process(home, "apply", planned["proposal_id"], "--confirm-destructive", "--json"))
    exported = ok(toolcat_in_process(home, "export", "--format", "manifest", "--json"))["manifest"]
    # A manifest naming no compatibility mode leaves the catalog's, which the export names (backward here).
    want = {"compatibility": "backward"} | Manifest.model_validate(manifest).normalised().document()
    got = Manifest.model_validate(exported).document()
    assert {k: (got[k], want.get(k)) for k in got if got[k] != want.get(k)} == {}
    assert set_changes(before, sets_of(home)) == planned["effects"]


# 5 examples (≈ 4 s each): the suite must stay within its 12 minutes on 2 cores.
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=[Phase.generate])
@given(two_manifests())
def test_plan_then_apply_reaches_the_manifest_and_does_what_it_predicted(
        manifests: tuple[dict[str, Any], dict[str, Any]]) -> None:
    first, second = manifests
    with tempfile.TemporaryDirectory(prefix="toolcat-plan-property-") as scratch, toolcat_environ("tester"):
        home = Path(scratch) / "home"
        plan_and_apply(home, first)
        plan_and_apply(home, second)
