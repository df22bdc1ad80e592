"""SemVer parsing and precedence (through the `semver` package): the release clock must order exactly as
the spec says."""
from __future__ import annotations

import pytest

from domain.errors import UsageError
from domain.versions import InvalidVersion, parse_version

SPEC_CHAIN = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
]


def test_spec_precedence_example_chain_is_strictly_increasing():
    # given the precedence example from the SemVer spec
    versions = [parse_version(text) for text in SPEC_CHAIN]
    # when each is compared with its successor, then each is strictly smaller
    for lower, higher in zip(versions, versions[1:]):
        assert lower < higher, (lower, higher)
        assert not higher < lower
        assert lower != higher


def test_sorting_a_shuffled_chain_restores_spec_order():
    # given the chain reversed
    shuffled = [parse_version(text) for text in reversed(SPEC_CHAIN)]
    # when sorted, then it matches the spec order
    assert [str(v) for v in sorted(shuffled)] == SPEC_CHAIN


@pytest.mark.parametrize(
    "lower, higher",
    [
        ("1.0.0", "2.0.0"),
        ("2.0.0", "2.1.0"),
        ("2.1.0", "2.1.1"),
        ("1.9.0", "1.10.0"),  # numeric, not lexical
        ("1.0.0-2", "1.0.0-10"),  # numeric identifiers compare numerically
        ("1.0.0-999", "1.0.0-a"),  # numeric < alphanumeric
        ("1.0.0-a", "1.0.0-a.0"),  # shorter set < longer with equal prefix
        ("1.0.0-rc.1", "1.0.0"),  # pre-release < release
        ("1.0.0", "1.0.1-alpha"),
    ],
)
def test_precedence_rules(lower, higher):
    assert parse_version(lower) < parse_version(higher)
    assert parse_version(higher) > parse_version(lower)


def test_build_metadata_is_ignored_for_ordering_but_kept_in_text():
    # given two versions differing only in build metadata
    a, b = parse_version("1.2.3+build.1"), parse_version("1.2.3+other")
    # then they compare equal, hash alike, and still print their own metadata
    assert a == b == parse_version("1.2.3")
    assert not a < b and not b < a
    assert hash(a) == hash(b)
    assert str(a) == "1.2.3+build.1"


@pytest.mark.parametrize("text", ["0.0.0", "1.4.0", "1.0.0-alpha.1", "1.0.0-0.3.7", "1.0.0-x-y.z+001.exp-1"])
def test_str_round_trips_canonical_text(text):
    assert str(parse_version(text)) == text


def test_parse_splits_fields():
    v = parse_version("10.20.30-rc.1+sha.5")
    assert (v.major, v.minor, v.patch, v.prerelease, v.build) == (10, 20, 30, "rc.1", "sha.5")


def test_bump_minor_drops_patch_prerelease_and_build():
    assert parse_version("1.4.7-rc.1+b").bump_minor() == parse_version("1.5.0")
    assert str(parse_version("1.4.7-rc.1+b").bump_minor()) == "1.5.0"


@pytest.mark.parametrize(
    "text",
    [
        "01.0.0", "1.0", "v1.0.0", "", "1.0.0-", "1.0.0-01", "1.0.0+", "1.0.0-a..b",
        " 1.0.0", "1.0.0\n", "1.\u0663.0", "1.0.0.0",
    ],
)
def test_invalid_versions_are_rejected(text):
    # when parsing malformed text, then InvalidVersion (a usage error) says what a version looks like
    with pytest.raises(InvalidVersion) as caught:
        parse_version(text)
    assert caught.value.code == "invalid_version"
    assert isinstance(caught.value, UsageError)
    assert "1.4.0" in caught.value.message
    assert caught.value.details["given"] == text


@pytest.mark.parametrize("given", [None, b"1.0.0", 1])
def test_non_string_is_rejected(given):
    with pytest.raises(InvalidVersion) as caught:
        parse_version(given)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_version"
