"""Validity of tool input schemas against their draft's metaschema: an invalid one disables the tool
wherever exposed. The check is `jsonschema`'s; these cases pin what it decides for us."""
from __future__ import annotations

import pytest

from domain.schema_check import schema_problems

READ_FILE_INPUT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "pattern": "^[^\\0]+$"},
        "offset": {"type": "integer", "minimum": 0},
        "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 10000, "multipleOf": 1},
        "encoding": {"enum": ["utf-8", "latin-1"], "default": "utf-8"},
        "ranges": {
            "type": "array",
            "items": {"$ref": "#/$defs/range"},
            "minItems": 0,
            "uniqueItems": True,
        },
    },
    "required": ["path"],
    "additionalProperties": False,
    "$defs": {
        "range": {
            "type": "object",
            "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
            "required": ["start", "end"],
        }
    },
    "x-vendor": {"anything": "goes"},
}


DRAFT_07 = "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize(
    "schema",
    [
        READ_FILE_INPUT,
        True,
        False,
        {},
        {"$schema": DRAFT_07, "items": [{"type": "string"}, True]},  # draft-07 tuple form
        {"prefixItems": [{"type": "string"}, True]},  # its draft 2020-12 spelling
        {"anyOf": [{"type": "string"}, {"type": "number"}], "not": {"const": ""}},
        {"if": {"minimum": 0}, "then": {"maximum": 10}, "else": False},
        {"patternProperties": {"^x-": {}}, "propertyNames": {"maxLength": 20}},
        {"definitions": {"a": True}, "contains": {"type": "null"}, "minLength": 2.0},
        {"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 0, "exclusiveMinimum": True},
    ],
)
def test_valid_schemas_have_no_problems(schema):
    assert schema_problems(schema) == []


@pytest.mark.parametrize(
    "schema, expected",
    [
        (42, "/: 42 is not a schema"),
        (None, "/: None is not a schema"),
        ({"type": "strng"}, "/type: 'strng' is not valid under any of the given schemas"),
        ({"type": []}, "/type: [] should be non-empty"),
        ({"type": ["string", "strin"]}, "/type/1: 'strin' is not one of ['array', 'boolean'"),
        ({"type": ["string", "string"]}, "/type: ['string', 'string'] has non-unique elements"),
        ({"type": 3}, "/type: 3 is not valid under any of the given schemas"),
        ({"properties": []}, "/properties: [] is not of type 'object'"),
        ({"properties": {"path": {"type": "strng"}}}, "/properties/path/type: 'strng' is not valid under any"),
        ({"properties": {"a/b~c": 1}}, "/properties/a~1b~0c: 1 is not of type 'object', 'boolean'"),
        ({"patternProperties": {"(": {}}}, "/patternProperties: '(' is not a 'regex'"),
        ({"$defs": {"x": "string"}}, "/$defs/x: 'string' is not of type 'object', 'boolean'"),
        ({"definitions": 1}, "/definitions: 1 is not of type 'object'"),
        ({"items": "string"}, "/items: 'string' is not of type 'object', 'boolean'"),
        ({"$schema": DRAFT_07, "items": [True, 3]}, "/items/1: 3 is not of type 'object', 'boolean'"),
        ({"prefixItems": [True, 3]}, "/prefixItems/1: 3 is not of type 'object', 'boolean'"),
        ({"additionalProperties": "no"}, "/additionalProperties: 'no' is not of type 'object', 'boolean'"),
        ({"not": []}, "/not: [] is not of type 'object', 'boolean'"),
        ({"if": 1}, "/if: 1 is not of type 'object', 'boolean'"),
        ({"then": 1}, "/then: 1 is not of type 'object', 'boolean'"),
        ({"else": 1}, "/else: 1 is not of type 'object', 'boolean'"),
        ({"contains": "x"}, "/contains: 'x' is not of type 'object', 'boolean'"),
        ({"propertyNames": 0}, "/propertyNames: 0 is not of type 'object', 'boolean'"),
        ({"allOf": []}, "/allOf: [] should be non-empty"),
        ({"anyOf": {}}, "/anyOf: {} is not of type 'array'"),
        ({"oneOf": [True, "x"]}, "/oneOf/1: 'x' is not of type 'object', 'boolean'"),
        ({"required": "path"}, "/required: 'path' is not of type 'array'"),
        ({"required": ["a", 1]}, "/required/1: 1 is not of type 'string'"),
        ({"required": ["a", "a"]}, "/required: ['a', 'a'] has non-unique elements"),
        ({"enum": "a"}, "/enum: 'a' is not of type 'array'"),
        ({"minimum": "0"}, "/minimum: '0' is not of type 'number'"),
        ({"maximum": True}, "/maximum: True is not of type 'number'"),
        ({"exclusiveMinimum": None}, "/exclusiveMinimum: None is not of type 'number'"),
        ({"multipleOf": 0}, "/multipleOf: 0 is less than or equal to the minimum of 0"),
        ({"multipleOf": -2.5}, "/multipleOf: -2.5 is less than or equal to the minimum of 0"),
        ({"minLength": -1}, "/minLength: -1 is less than the minimum of 0"),
        ({"maxLength": 1.5}, "/maxLength: 1.5 is not of type 'integer'"),
        ({"minItems": "1"}, "/minItems: '1' is not of type 'integer'"),
        ({"maxItems": False}, "/maxItems: False is not of type 'integer'"),
        ({"maxProperties": -3}, "/maxProperties: -3 is less than the minimum of 0"),
        ({"uniqueItems": "yes"}, "/uniqueItems: 'yes' is not of type 'boolean'"),
        ({"pattern": "[a-"}, "/pattern: '[a-' is not a 'regex'"),
        ({"pattern": 5}, "/pattern: 5 is not of type 'string'"),
    ],
)
def test_each_invalid_kind_is_reported_once_with_its_path(schema, expected):
    # given a schema with exactly one fault, when checked, then one problem names it
    problems = schema_problems(schema)
    assert len(problems) == 1, problems
    assert problems[0].startswith(expected), problems


def test_problems_are_collected_recursively_not_just_the_first():
    # given faults at several depths
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "strng"},
            "b": {"items": {"properties": {"c": {"minimum": "x"}}}},
        },
        "allOf": [{"required": [1]}],
    }
    # then every one is reported
    assert sorted(schema_problems(schema)) == sorted(
        [
            "/properties/a/type: 'strng' is not valid under any of the given schemas",
            "/properties/b/items/properties/c/minimum: 'x' is not of type 'number'",
            "/allOf/0/required/0: 1 is not of type 'string'",
        ]
    )


def test_unknown_keywords_are_ignored():
    assert schema_problems({"x-anything": [1, 2], "x-vendor": {"a": None}}) == []


# --- where the metaschema check differs from the hand-written check it replaced ------------------------


def test_without_schema_keyword_the_draft_2020_12_metaschema_applies():
    # the draft-07 tuple form of `items` is only valid where the schema says it is draft-07
    assert schema_problems({"items": [{"type": "string"}, True]}) == [
        "/items: [{'type': 'string'}, True] is not of type 'object', 'boolean'"]


def test_an_unknown_schema_keyword_falls_back_to_draft_2020_12():
    assert schema_problems({"$schema": "https://example.com/my-dialect", "items": [True]}) == [
        "/items: [True] is not of type 'object', 'boolean'"]


def test_annotation_keywords_must_have_their_types():
    # `description` and `title` are strings in every draft (the hand-written check ignored them)
    assert sorted(schema_problems({"description": 3, "title": None})) == [
        "/description: 3 is not of type 'string'", "/title: None is not of type 'string'"]


@pytest.mark.parametrize("schema", [{"enum": []}, {"$schema": DRAFT_07, "enum": []}])
def test_an_empty_enum_is_valid_since_draft_06(schema):
    # it accepts nothing, which is a schema's right (the hand-written check rejected it)
    assert schema_problems(schema) == []


def test_the_schema_keyword_itself_must_be_a_string():
    assert schema_problems({"$schema": 5}) == ["/$schema: 5 is not of type 'string'"]
