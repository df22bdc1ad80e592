"""The grammar and length limit of every name, ID and free text (domain/grammar.py), value by value:
what each accepts, what each refuses and with which stable code."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from domain import grammar
from domain.errors import InvalidId, InvalidName, InvalidPattern, InvalidText, ToolcatError
from domain.naming import preset
from domain.versions import InvalidVersion

TYRUM = preset("tyrum")
BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]


def refused(check: Callable[[], Any], error: type[ToolcatError], code: str) -> ToolcatError:
    with pytest.raises(error) as caught:
        check()
    assert caught.value.code == code
    assert caught.value.exit_code == (2 if code == "invalid_version" else 3)
    return caught.value


# --- names: units, agents, connectors, plugins, backing servers -------------------------------------------

@pytest.mark.parametrize("name", ["a", "0team", "team-1", "team_1", "team.eu", "a.b-c.d_e", "a" * 128])
def test_a_name_of_lowercase_dotted_segments_is_accepted(name: str) -> None:
    assert grammar.check_name(name, "unit") == name


@pytest.mark.parametrize("name", [
    "null", "true", "false", "none", "undefined",  # read as a literal in JSON, CSV and SQL answers
    "read.", ".read", "a..b", "a.-b", "a._b",  # empty segments, a segment not starting with a letter or digit
    "Org", "ünit", "with space", "-lead", "_x", "", "a" * 129, "under/slash", "a:b", "a*",
    "\x01", "a\x7fb", "\u202eevil", "a\n", "unit\udcff", "scout\u200b", "\uff41",  # fullwidth a
])
def test_a_name_outside_the_grammar_is_invalid_name(name: str) -> None:
    error = refused(lambda: grammar.check_name(name, "agent"), InvalidName, "invalid_name")
    assert error.details["kind"] == "agent"


@pytest.mark.parametrize("namespace", ["arxiv", "acme.notes", "not-yet", "web_tools", "a" * 128])
def test_a_namespace_is_dotted_segments_each_starting_with_a_letter(namespace: str) -> None:
    assert grammar.check_namespace(namespace) == namespace


@pytest.mark.parametrize("namespace", ["1gh", "GH", "gh.", ".gh", "g h", "a" * 129, "null", "gh.*"])
def test_a_namespace_outside_the_grammar_is_invalid_name(namespace: str) -> None:
    refused(lambda: grammar.check_namespace(namespace), InvalidName, "invalid_name")


@pytest.mark.parametrize("label", ["sink:network", "source:sensitive", "pii", "a:b:c"])
def test_a_class_label_is_lowercase_words_joined_by_colons(label: str) -> None:
    assert grammar.check_class_label(label) == label


@pytest.mark.parametrize("label", ["Sink:network", "sink:", ":x", "sink network", "a" * 65, "sink:\u202enet"])
def test_a_class_label_outside_the_grammar_is_invalid_name(label: str) -> None:
    refused(lambda: grammar.check_class_label(label), InvalidName, "invalid_name")


# --- image references (OCI distribution reference grammar) -------------------------------------------------

@pytest.mark.parametrize("reference", [
    "ubuntu", "acme/librarian:1.0", "ghcr.io/acme/librarian:1.2", "localhost:5000/x/y",
    "registry.example.com:443/team/app__v2:latest", "a/b-c/d--e:T_1.x",
    "[2001:db8::1]:5000/img:1", "img@sha256:" + "a" * 64, "img:1.0@sha512:" + "F" * 128,
    "a" * 255 + ":" + "t" * 128,
])
def test_an_oci_image_reference_is_accepted(reference: str) -> None:
    assert grammar.check_image_ref(reference) == reference


@pytest.mark.parametrize("reference", [
    "\x01", "a\x7fb", "\u202e", "../..", "*", ":", "",  # the values the issue found stored
    "Ubuntu", "acme/Librarian", "img:", "img@", "img:-tag", "img:" + "t" * 129, "a" * 256,
    "img@sha256:abc", "img@sha256:" + "g" * 64, "/img", "img/", "a//b", "img:1.0\n", " img", "img:\u202e1",
    "img:1 ; rm -rf /", "--json", "a" * 300 + "@sha256:" + "a" * 800,
])
def test_an_image_reference_outside_the_oci_grammar_is_invalid_name(reference: str) -> None:
    error = refused(lambda: grammar.check_image_ref(reference), InvalidName, "invalid_name")
    assert error.details["kind"] == "image"
    assert len(error.message) < 400  # a huge value is never repeated whole


# --- idempotency keys, proposal ids, release versions -----------------------------------------------------

@pytest.mark.parametrize("key", ["k-1", "3f2b9c1e-6a41-4b8e-9d0e-2b7c0a7f4c11", "deploy/42:retry=1", "A" * 255])
def test_an_idempotency_key_is_visible_ascii(key: str) -> None:
    assert grammar.check_idempotency_key(key) == key


@pytest.mark.parametrize("key", ["", "-k", "--json", "k 1", "k\t1", "clé", "k\u202e", "A" * 256, "'; DROP"])
def test_an_idempotency_key_outside_the_grammar_is_invalid_name(key: str) -> None:
    error = refused(lambda: grammar.check_idempotency_key(key), InvalidName, "invalid_name")
    assert error.details["kind"] == "idempotency_key"


@pytest.mark.parametrize("proposal", ["p-1", "3f2b9c1e-6a41-4b8e-9d0e-2b7c0a7f4c11", "a" * 64])
def test_a_proposal_id_is_lowercase_letters_digits_and_dashes(proposal: str) -> None:
    assert grammar.check_proposal_id(proposal) == proposal


@pytest.mark.parametrize("proposal", ["", "P-1", "-p", "p_1", "p.1", "a" * 65, "p\u202e"])
def test_a_proposal_id_outside_the_grammar_is_invalid_name(proposal: str) -> None:
    error = refused(lambda: grammar.check_proposal_id(proposal), InvalidName, "invalid_name")
    assert error.details["kind"] == "proposal_id"


@pytest.mark.parametrize("version", ["1.0.0", "1.4.0-rc.1+abc", "1.0.0-" + "a" * 122])
def test_a_release_version_is_semver_of_bounded_length(version: str) -> None:
    assert grammar.check_version_text(version) == version


@pytest.mark.parametrize("version", ["1.0.0-" + "a" * 123, "1.0", "v1.0.0", "1.0.0\n", "1.0.0\u202e"])
def test_a_release_version_too_long_or_not_semver_is_invalid_version(version: str) -> None:
    refused(lambda: grammar.check_version_text(version), InvalidVersion, "invalid_version")


# --- tool IDs and the entries of allowlists and grants ---------------------------------------------------

@pytest.mark.parametrize("tool_id", ["read", "mcp.github.search_code", "a" * 200])
def test_an_id_of_visible_ascii_within_the_limit_passes_the_universal_check(tool_id: str) -> None:
    assert grammar.check_id_text(tool_id) == tool_id


@pytest.mark.parametrize("tool_id", ["", "a" * 201, "re ad", "read\n", "re\u202ead", "reаd", "read*",
                                     "read\udcff", "\uff52ead"])
def test_an_id_that_is_empty_long_or_not_visible_ascii_is_invalid_id(tool_id: str) -> None:
    refused(lambda: grammar.check_id_text(tool_id), InvalidId, "invalid_id")


def test_a_policy_that_allows_non_ascii_ids_takes_letters_of_any_script_but_never_invisible_ones() -> None:
    assert grammar.check_id_text("outil.lire_é", non_ascii=True) == "outil.lire_é"
    assert grammar.check_id_text("инструмент.читать", non_ascii=True) == "инструмент.читать"
    for hidden in [*BIDI, "\u200b", "\u00a0", "\x85"]:
        refused(lambda: grammar.check_id_text(f"outil{hidden}lire", non_ascii=True), InvalidId, "invalid_id")


@pytest.mark.parametrize("entry", ["*", "tool.*", "tool.fs.*", "arxiv.*", "acme.notes.*", "read",
                                   "tool.fs.read", "mcp.memory.seed", "acme.ticket.create"])
def test_an_allowlist_or_grant_entry_is_a_pattern_a_shim_or_a_well_formed_id(entry: str) -> None:
    assert grammar.check_entry(TYRUM, entry) == entry


@pytest.mark.parametrize("entry", ["Web Search", "tool..fs", "read.", "READ", "a" * 5000, "re\u202ead",
                                   "--json", "'; DROP TABLE events; --", '{"a": 1}', "r\x00ead"])
def test_a_malformed_entry_is_invalid_id_not_unknown_tool(entry: str) -> None:
    refused(lambda: grammar.check_entry(TYRUM, entry), InvalidId, "invalid_id")


@pytest.mark.parametrize("entry", ["arxiv*", "Arxiv.*", "arxiv.**", ".*", "arxiv..*", "ar xiv.*", "arxiv.s*",
                                   "a" * 5000 + ".*", "arx\u202eiv.*"])
def test_a_malformed_pattern_is_invalid_pattern(entry: str) -> None:
    refused(lambda: grammar.check_entry(TYRUM, entry), InvalidPattern, "invalid_pattern")


# --- free text and actors ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Read a file", "two\nlines\tand a tab", "«naïve» ✓ 🗒 עברית", "x" * 2000,
                                  "'; DROP TABLE events; --", "[red]BETA[/red]", "<script>alert(1)</script>"])
def test_free_text_keeps_any_printable_text_newlines_and_tabs(text: str) -> None:
    assert grammar.check_text(text, "reason") == text


@pytest.mark.parametrize("character", [*BIDI, "\u200e", "\u200f", "\u061c", "\x00", "\x1b", "\r", "\x7f",
                                       "\x85", "\u2028", "\u2029", "\udcff"])
def test_free_text_with_a_control_or_bidi_character_is_invalid_text(character: str) -> None:
    error = refused(lambda: grammar.check_text(f"approved{character}by ops", "evidence"), InvalidText,
                    "invalid_text")
    assert error.details == {"field": "evidence", "character": f"U+{ord(character):04X}"}


def test_free_text_longer_than_the_limit_is_invalid_text() -> None:
    error = refused(lambda: grammar.check_text("x" * 2001, "description"), InvalidText, "invalid_text")
    assert error.details == {"field": "description", "length": 2001, "limit": 2000}


@pytest.mark.parametrize("actor", ["alice", "José Müller", "ci@build-42", "a" * 128])
def test_an_actor_is_one_line_of_text(actor: str) -> None:
    assert grammar.check_actor(actor) == actor


@pytest.mark.parametrize("actor", ["alice\nbob", "alice\t", "\u202eecila", "a" * 129, "\x1b[31malice"])
def test_an_actor_with_a_line_break_a_control_or_a_bidi_character_is_invalid_text(actor: str) -> None:
    refused(lambda: grammar.check_actor(actor), InvalidText, "invalid_text")


def test_an_error_message_repeats_a_refused_value_escaped_and_cut() -> None:
    assert grammar.shown("re\u202ead") == "'re\\u202ead'"
    assert grammar.shown("a\x1b[31m") == "'a\\x1b[31m'"
    assert grammar.shown("x" * 5000) == "'" + "x" * 60 + "'… (5000 characters)"
