"""ARCH-21's exposure selectors: what a caller may add to "which tools, and how exposed, for this subject".

ARCH-21 answers exposure for a declared subject only, and reserves two explicit selectors for later work,
`execution_profile` and `conversation_kind`, forbidding any answer inferred from implicit conversation or
operator state. The catalog models neither profiles nor conversation kinds: an answer "for a profile"
would be the subject's whole set under another name. So the inventory reads take the reserved names and
refuse them, rather than ignoring them (a caller would believe its answer was narrowed). `conversation_id`
and `turn_id` are context-report selectors, never exposure selectors: refused as well."""
from __future__ import annotations

from collections.abc import Mapping

from domain.errors import CatalogRuleError

RESERVED_SELECTORS = ("execution_profile", "conversation_kind")
CONTEXT_REPORT_SELECTORS = ("conversation_id", "turn_id")
SELECTORS = RESERVED_SELECTORS + CONTEXT_REPORT_SELECTORS


class UnsupportedSelector(CatalogRuleError):
    """An exposure selector the catalog does not answer by (exit 3; HTTP 422)."""

    code = "unsupported_selector"


def refuse_selectors(given: Mapping[str, object]) -> None:
    """Refuse the first selector of SELECTORS given a value in `given` (a read's options or parameters)."""
    named = [name for name in SELECTORS if given.get(name) is not None]
    if not named:
        return
    name = named[0]
    why = ("an exposure selector ARCH-21 reserves for later work; the catalog answers the declared subject's "
           "whole effective set and has no execution profiles or conversation kinds to narrow it by"
           if name in RESERVED_SELECTORS else
           "a context-report selector (ARCH-21), not an exposure selector: no tool inventory depends on it")
    raise UnsupportedSelector(f"{name} is {why}; leave {name} out to get the subject's answer", selector=name,
                              given=named, reserved=list(RESERVED_SELECTORS))
