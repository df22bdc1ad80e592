"""The grammar and length limit of every name, ID and free text a command may write.

One place defines each: the use cases call these checks first, so a malformed or oversized value is
refused (exit 3, a stable code) before anything is looked up or written. They guard what is written
only: stored events are read as they are, and every output escapes what it prints (`hidden_character`
says what must be made visible).

Codes: `invalid_name` (units, agents, connectors, namespaces, families, plugins, backing servers,
class labels, image references, idempotency keys, proposal ids), `invalid_id` (tool IDs, aliases and
allowlist or grant entries; their shape is the naming policy's), `invalid_pattern` (an `ns.*` entry),
`invalid_text` (reasons, descriptions, evidence, actors); release versions keep `invalid_version`.
"""
from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from domain.errors import InvalidId, InvalidName, InvalidPattern, InvalidPolicy, InvalidText, ToolcatError
from domain.versions import InvalidVersion, parse_version

if TYPE_CHECKING:
    from domain.naming import NamingPolicy
    from domain.values import ToolSpec

NAME_MAX = 128  # units, agents, connectors, namespaces, families, plugins, backing servers
# Tool IDs and aliases: room for `mcp.<server>.<tool>` with a tool name at MCP's 128-character bound.
ID_MAX = 200
CLASS_MAX = 64
IDEMPOTENCY_KEY_MAX = 255
PROPOSAL_ID_MAX = 64
VERSION_MAX = 128
TEXT_MAX = 2000  # reasons, descriptions, evidence
ACTOR_MAX = 128
# The OCI distribution limits: a repository name of at most 255 characters (NameTotalLengthMax), a
# tag of at most 128; the whole reference, digest included, is bounded here.
IMAGE_NAME_MAX = 255
IMAGE_REF_MAX = 1024

# Lowercase ASCII segments separated by single dots: no empty segment, no leading or trailing dot.
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)*")
_NAMESPACE = re.compile(r"[a-z][a-z0-9_-]*(?:\.[a-z][a-z0-9_-]*)*")
_CLASS = re.compile(r"[a-z][a-z0-9_-]*(?::[a-z][a-z0-9_-]*)*")  # e.g. sink:network, source:sensitive
# Visible ASCII, starting with a letter or digit (never option-like), e.g. a UUID or `deploy-42`.
_IDEMPOTENCY_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+=@-]*")
_PROPOSAL_ID = re.compile(r"[a-z0-9][a-z0-9-]*")
# Words that read as a missing value or a boolean in JSON, CSV and SQL answers.
_LITERAL_WORDS = frozenset({"null", "none", "nil", "undefined", "true", "false"})

# The OCI distribution reference grammar, transcribed from github.com/distribution/reference
# (regexp.go, the grammar in reference.go's package comment):
#   reference := name [ ":" tag ] [ "@" digest ]
#   name      := [domain '/'] remote-name;  remote-name := path-component ['/' path-component]*
# Go's `\w` and `[[:xdigit:]]` are ASCII-only, so both are spelt out; matched with `re.fullmatch`
# (Go's `$` is the end of the text, never before a final newline).
_OCI_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_OCI_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_OCI_HOST = rf"(?:{_OCI_DOMAIN_COMPONENT}(?:\.{_OCI_DOMAIN_COMPONENT})*|\[(?:[a-fA-F0-9:]+)\])"
_OCI_NAME = rf"(?:{_OCI_HOST}(?::[0-9]+)?/)?{_OCI_PATH_COMPONENT}(?:/{_OCI_PATH_COMPONENT})*"
_OCI_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_OCI_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_OCI_REFERENCE = re.compile(rf"({_OCI_NAME})(?::{_OCI_TAG})?(?:@{_OCI_DIGEST})?")

# Unicode bidi controls (embeddings, overrides, isolates: the "Trojan Source" characters) and the
# three bidi marks; refused in what is written, shown escaped wherever something is printed.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_SHOWN_MAX = 60  # how much of a refused value an error message repeats


def hidden_character(char: str, *, multiline: bool = False) -> bool:
    """Whether `char` could make printed text show something other than what it holds: control
    characters (newline and tab allowed in multi-line text), bidi controls, line and paragraph
    separators, and lone surrogates (undecodable bytes from argv)."""
    if char in "\n\t":
        return not multiline
    return char in BIDI_CONTROLS or unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp")


_SHORT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escape_hidden(char: str) -> str:
    """How a hidden character is written where it is shown: `\\n`, `\\x1b`, `\\u202e`."""
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def visible(text: str, *, multiline: bool = False) -> str:
    """`text` with every hidden character written as its escape, for a terminal or a page: what is shown
    is then what is stored, in the order it is stored."""
    if text.isascii() and text.isprintable():  # the usual case, decided at C speed
        return text
    return "".join(escape_hidden(c) if hidden_character(c, multiline=multiline) else c for c in text)


def shown(value: str) -> str:
    """A refused value as an error message repeats it: quoted, escaped, and cut when long."""
    if len(value) <= _SHOWN_MAX:
        return _escaped_repr(value)
    return f"{_escaped_repr(value[:_SHOWN_MAX])}… ({len(value)} characters)"


def _escaped_repr(value: str) -> str:
    # repr() escapes controls and format characters; ascii() would also escape harmless accents.
    text = repr(value)
    return "".join(f"\\u{ord(c):04x}" if c in BIDI_CONTROLS else c for c in text)


def _clip(value: str) -> str:
    return value if len(value) <= 200 else value[:200] + "…"


# -- names ---------------------------------------------------------------------------------------------

def check_name(value: str, kind: str) -> str:
    """A unit, agent, connector, plugin or backing-server name."""
    return _check_dotted(value, kind, _NAME, "letters, digits, '_' or '-' (starting with a letter or "
                                             "digit)")


def check_namespace(value: str, kind: str = "tool namespace") -> str:
    """A tool namespace or family: the leading segments of tool IDs."""
    return _check_dotted(value, kind, _NAMESPACE, "letters, digits, '_' or '-' (each starting with a "
                                                  "letter)")


def _check_dotted(value: str, kind: str, grammar: re.Pattern[str], segments: str) -> str:
    if len(value) > NAME_MAX or not grammar.fullmatch(value):
        raise InvalidName(f"{kind} name {shown(value)} must be lowercase ASCII segments of {segments}, "
                          f"separated by single dots, at most {NAME_MAX} characters in all",
                          kind=kind, name=_clip(value), limit=NAME_MAX)
    if value in _LITERAL_WORDS:
        raise InvalidName(f"{kind} name {shown(value)} reads as a JSON or SQL literal; choose another",
                          kind=kind, name=value)
    return value


def check_class_label(value: str) -> str:
    """A tool class label such as `sink:network`: lowercase segments joined by ':'."""
    if len(value) > CLASS_MAX or not _CLASS.fullmatch(value):
        raise InvalidName(f"class label {shown(value)} must be lowercase ASCII words joined by ':' (e.g. "
                          f"sink:network), at most {CLASS_MAX} characters", kind="class", name=_clip(value),
                          limit=CLASS_MAX)
    return value


def check_image_ref(value: str) -> str:
    """An OCI image reference: `[registry[:port]/]repository[:tag][@digest]`, lowercase repository."""
    matched = _OCI_REFERENCE.fullmatch(value) if len(value) <= IMAGE_REF_MAX else None
    if matched is None or len(matched.group(1)) > IMAGE_NAME_MAX:
        raise InvalidName(
            f"image reference {shown(value)} is not an OCI image reference: expected "
            "[registry[:port]/]repository[:tag][@digest] with a lowercase repository (e.g. "
            f"ghcr.io/acme/librarian:1.2), a name of at most {IMAGE_NAME_MAX} characters",
            kind="image", name=_clip(value), limit=IMAGE_REF_MAX)
    return value


def image_publisher(value: str) -> str:
    """Who publishes a checked image reference: its repository without the last path component or
    the tag (`acme/librarian:1.1` -> `acme`; a one-component name is its own publisher). The agent
    author chooses an image's tool namespace, so the namespace belongs to the publisher, whichever
    of its images and versions runs."""
    matched = _OCI_REFERENCE.fullmatch(check_image_ref(value))
    assert matched is not None  # check_image_ref refused anything else
    repository = matched.group(1)
    return repository.rpartition("/")[0] or repository


def check_idempotency_key(value: str) -> str:
    if len(value) > IDEMPOTENCY_KEY_MAX or not _IDEMPOTENCY_KEY.fullmatch(value):
        raise InvalidName(f"idempotency key {shown(value)} must be visible ASCII (letters, digits and "
                          f"._:/+=@-, starting with a letter or digit), at most {IDEMPOTENCY_KEY_MAX} "
                          "characters, e.g. a UUID", kind="idempotency_key", name=_clip(value),
                          limit=IDEMPOTENCY_KEY_MAX)
    return value


def check_proposal_id(value: str) -> str:
    """A proposal's id (ADR-0030 proposals, confirmed by id): lowercase letters, digits and '-'."""
    if len(value) > PROPOSAL_ID_MAX or not _PROPOSAL_ID.fullmatch(value):
        raise InvalidName(f"proposal id {shown(value)} must be lowercase ASCII letters, digits and '-' "
                          f"(starting with a letter or digit), at most {PROPOSAL_ID_MAX} characters",
                          kind="proposal_id", name=_clip(value), limit=PROPOSAL_ID_MAX)
    return value


def check_version_text(value: str) -> str:
    """A release version to publish: SemVer 2.0.0, at most VERSION_MAX characters."""
    if len(value) > VERSION_MAX:
        raise InvalidVersion(f"version {shown(value)} is longer than {VERSION_MAX} characters",
                             given=_clip(value), limit=VERSION_MAX)
    parse_version(value)
    return value


# -- tool IDs, aliases and the entries of allowlists and grants ----------------------------------------------

def check_id_text(value: str, *, non_ascii: bool = False) -> str:
    """What every tool ID and alias obeys whatever the policy's patterns say: a length limit; visible
    ASCII without '*' (which makes a pattern); other characters only where the policy allows non-ASCII
    IDs, and then letters, marks and digits only (never a space, control, format or bidi character)."""
    if not value or len(value) > ID_MAX:
        raise InvalidId(f"ID {shown(value)} must be 1 to {ID_MAX} characters", tool_id=_clip(value),
                        limit=ID_MAX)
    for char in value:
        if "!" <= char <= "~" and char != "*":
            continue
        if non_ascii and not char.isascii() and unicodedata.category(char)[0] in "LMN":
            continue
        allowed = "letters, marks and digits" if non_ascii else "ASCII letters, digits and punctuation"
        raise InvalidId(f"ID {shown(value)} holds {shown(char)} (U+{ord(char):04X}); IDs are {allowed} "
                        "as the naming policy's patterns allow", tool_id=_clip(value),
                        character=f"U+{ord(char):04X}")
    return value


def check_pattern(pattern: str) -> str:
    """A namespace pattern `ns.*`: every tool whose ID starts with `ns.`."""
    namespace = pattern.removesuffix(".*")
    if len(pattern) > ID_MAX or namespace == pattern or not _NAMESPACE.fullmatch(namespace):
        raise InvalidPattern(f"{shown(pattern)} is not a namespace pattern; write it as ns.* (e.g. arxiv.*), "
                             f"at most {ID_MAX} characters", pattern=_clip(pattern), limit=ID_MAX)
    return pattern


def check_entry(policy: NamingPolicy, entry: str) -> str:
    """An allowlist or grant entry: `*`, a pattern shim of the policy, `ns.*`, or a well-formed ID
    (one the policy could accept as a tool ID or alias). Whether it names anything is for the caller."""
    if entry == "*" or policy.expand_pattern_shim(entry) is not None:
        return entry
    if entry.endswith("*"):
        return check_pattern(entry)
    check_id_text(entry, non_ascii=policy.non_ascii_ids)
    if not policy.is_well_formed(entry):
        raise InvalidId(f"{shown(entry)} is neither a tool ID nor an alias of the {policy.name} naming "
                        "policy, nor a pattern (ns.* or *)", tool_id=_clip(entry), policy=policy.name)
    return entry


# -- free text -------------------------------------------------------------------------------------------

def check_text(value: str, what: str) -> str:
    """A reason, description or evidence: any text up to TEXT_MAX characters, lines and tabs
    included, but no other control character and no bidi control."""
    return _check_text(value, what, TEXT_MAX, multiline=True)


def check_actor(value: str) -> str:
    """Who made a change: one line of text, at most ACTOR_MAX characters."""
    return _check_text(value, "actor", ACTOR_MAX, multiline=False)


def check_label(value: str, what: str, limit: int) -> str:
    """A short label (a secret's display name): one line of text, at most `limit` characters."""
    return _check_text(value, what, limit, multiline=False)


def _check_text(value: str, what: str, limit: int, *, multiline: bool) -> str:
    if len(value) > limit:
        raise InvalidText(f"{what} is {len(value)} characters long; at most {limit} are kept",
                          field=what, length=len(value), limit=limit)
    bad = next((c for c in value if hidden_character(c, multiline=multiline)), None)
    if bad is not None:
        allowed = "newlines and tabs are the only control characters allowed" if multiline else \
            "it is one line without control characters"
        raise InvalidText(f"{what} holds the invisible or reordering character U+{ord(bad):04X} "
                          f"({unicodedata.name(bad, 'unnamed')}); {allowed}, and no bidi controls",
                          field=what, character=f"U+{ord(bad):04X}")
    return value


# -- what several use cases check together ------------------------------------------------------------

def check_spec(spec: ToolSpec) -> ToolSpec:
    """The names and text of a tool's description (its source, group, tier … are closed choices)."""
    if spec.family is not None:
        check_namespace(spec.family, "family")
    if spec.plugin is not None:
        check_name(spec.plugin, "plugin")
    if spec.backing_server is not None:
        check_name(spec.backing_server, "backing server")
    if spec.description is not None:
        check_text(spec.description, "description")
    for label in spec.classes:
        check_class_label(label)
    return spec


def check_policy(policy: NamingPolicy) -> NamingPolicy:
    """A policy supplied as a file: its name is a name, the IDs it lists are IDs, and its patterns
    hold nothing invisible."""
    try:
        check_name(policy.name, "policy")
        listed = [*policy.reserved_ids, *policy.single_segment_ids,
                  *(t for targets in policy.pattern_shims.values() for t in targets if t != "*"),
                  *policy.shim_ids, *policy.shim_ids.values()]
        for tool_id in listed:
            check_id_text(tool_id, non_ascii=policy.non_ascii_ids)
        for namespace in [*policy.platform_namespaces, *policy.namespace_patterns]:
            check_namespace(namespace, "platform namespace")
        for verb in policy.verbs:
            check_name(verb, "verb")
        patterns = [policy.id_pattern, policy.alias_pattern, *policy.source_patterns.values(),
                    *policy.namespace_patterns.values(),
                    *policy.reserved_prefixes, *policy.pattern_shims]
        for pattern in patterns:
            _check_text(pattern, "pattern", TEXT_MAX, multiline=False)
    except ToolcatError as error:
        raise InvalidPolicy(f"invalid naming policy: {error.message}", **error.details) from None
    return policy
