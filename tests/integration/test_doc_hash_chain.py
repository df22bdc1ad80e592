"""The auditors' page's "The envelope and its hash chain, exactly" stays true: its worked example is a real
chain that toolcat's own code agrees with, and its verification snippet, run as the page prints it, checks a
real home's `toolcat.events` topic and rejects a changed envelope."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from infra.settings import Settings
from projections.canonical import GENESIS_HASH, canonical_json
from projections.envelope import Envelope
from tests.doc_text import code_blocks, section
from tests.integration.kafka_support import events_on_topic, relay_all, store_head, toolcat
from tests.support import SCRIPT, run_in_process

PAGE, HEADING = "docs/auditors.md", "## The envelope and its hash chain, exactly"
# Non-ASCII text and floats, so the real chain exercises the rules the page states for them.
SCHEMA = {"type": "object", "properties": {"limit": {"type": "number", "minimum": 0.5, "maximum": 1e16},
                                           "note": {"type": "string", "description": "«naïve» ✓ 🗒"}}}


def chain_section() -> str:
    return section(PAGE, HEADING)


def documented_verify_chain() -> Callable[[list[Any]], tuple[int, str]]:
    """The page's snippet, executed exactly as printed."""
    [snippet] = code_blocks(chain_section(), "python")
    namespace: dict[str, Any] = {}
    exec(compile(snippet, PAGE, "exec"), namespace)  # noqa: S102 - the page's own text
    return namespace["verify_chain"]


def documented_envelopes() -> list[str]:
    [published] = code_blocks(chain_section(), "json")
    return published.splitlines()


def test_the_worked_example_is_a_real_chain_that_toolcat_agrees_with() -> None:
    first_text, second_text = documented_envelopes()
    first, second = Envelope.model_validate_json(first_text), Envelope.model_validate_json(second_text)
    [hashed] = code_blocks(chain_section(), "text")
    hashed = hashed.removesuffix("\n")  # the code fence's own line end: the hashed bytes end with the JSON

    assert first.to_json().decode() == first_text and second.to_json().decode() == second_text
    assert hashed == f"{GENESIS_HASH}\n{canonical_json(first.body()).decode()}"
    assert hashlib.sha256(hashed.encode()).hexdigest() == first.hash == first.expected_hash() == second.prev_hash
    assert f"`{first.hash}`" in chain_section()
    assert second.expected_hash() == second.hash
    assert documented_verify_chain()(documented_envelopes()) == (2, second.hash)


def test_the_snippet_rejects_a_changed_or_unanchored_chain_and_skips_repeats() -> None:
    verify_chain = documented_verify_chain()
    first, second = documented_envelopes()
    forged = json.loads(second)
    forged["actor"] = "mallory"

    with pytest.raises(ValueError, match="position 2$"):
        verify_chain([first, canonical_json(forged)])
    with pytest.raises(ValueError, match="position 2$"):
        verify_chain([second])  # no anchor: the chain must start at the genesis link
    assert verify_chain([first, first, second, second]) == verify_chain([first, second])


def test_the_snippet_verifies_a_real_homes_topic_up_to_the_head_audit_verify_reports(
        kafka_settings: Settings, tmp_path: Path) -> None:
    home = kafka_settings.home
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA, ensure_ascii=False), encoding="utf-8")
    run_in_process(home, [*SCRIPT, ["tool", "register", "acme.notes.fetch", "--source", "plugin",
                                    "--plugin", "acme", "--group", "retrieval", "--tier", "default",
                                    "--visibility", "public", "--schema", str(schema),
                                    "--description", "Fetch a note — «vite» 🗒"]])
    head = store_head(kafka_settings)
    relay_all(kafka_settings, tmp_path / "relay-state.json")
    values = [message.value for message in events_on_topic(kafka_settings, range(1, head + 1))]
    assert "🗒".encode() in values[-2] + values[-1] and b"1e+16" in values[-2] + values[-1]

    verify_chain = documented_verify_chain()

    verified = toolcat("audit", "verify", home=home)
    # the home's writes never caught a read model up and nothing sealed it: the chain had no witness
    assert verified.code == 7 and verified.json["verdict"] == "unverified", verified
    assert verify_chain(values) == (head, verified.json["head"])
    tampered = values[:]
    tampered[head // 2] = tampered[head // 2].replace(b'"actor":"tester"', b'"actor":"mallory"', 1)
    assert tampered != values
    with pytest.raises(ValueError, match=f"position {head // 2 + 1}$"):
        verify_chain(tampered)
