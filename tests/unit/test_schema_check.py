"""Structural validity of tool input schemas: an invalid one disables the tool wherever exposed."""
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


@pytest.mark.parametrize(
    "schema",
    [
        READ_FILE_INPUT,
        True,
        False,
        {},
        {"items": [{"type": "string"}, True]},  # draft-07 tuple form
        {"anyOf": [{"type": "string"}, {"type": "number"}], "not": {"const": ""}},
        {"if": {"minimum": 0}, "then": {"maximum": 10}, "else": False},
        {"patternProperties": {"^x-": {}}, "propertyNames": {"maxLength": 20}},
        {"definitions": {"a": True}, "contains": {"type": "null"}, "minLength": 2.0},
    ],
)
def test_valid_schemas_have_no_problems(schema):
    assert schema_problems(schema) == []


@pytest.mark.parametrize(
    "schema, expected",
    [
        (42, "/: 42 is not a schema"),
        (None, "/: None is not a schema"),
        ({"type": "strng"}, "/type: 'strng' is not a JSON type"),
        ({"type": []}, "/type: must be a JSON type name or a non-empty array"),
        ({"type": ["string", "strin"]}, "/type: 'strin' is not a JSON type"),
        ({"type": ["string", "string"]}, "/type: must not repeat a type"),
        ({"type": 3}, "/type: must be a JSON type name"),
        ({"properties": []}, "/properties: must be an object whose values are schemas"),
        ({"properties": {"path": {"type": "strng"}}}, "/properties/path/type: 'strng' is not a JSON type"),
        ({"properties": {"a/b~c": 1}}, "/properties/a~1b~0c: 1 is not a schema"),
        ({"patternProperties": {"(": {}}}, "/patternProperties/(: '(' is not a valid regular expression"),
        ({"$defs": {"x": "string"}}, "/$defs/x: 'string' is not a schema"),
        ({"definitions": 1}, "/definitions: must be an object"),
        ({"items": "string"}, "/items: 'string' is not a schema"),
        ({"items": [True, 3]}, "/items/1: 3 is not a schema"),
        ({"additionalProperties": "no"}, "/additionalProperties: 'no' is not a schema"),
        ({"not": []}, "/not: [] is not a schema"),
        ({"if": 1}, "/if: 1 is not a schema"),
        ({"then": 1}, "/then: 1 is not a schema"),
        ({"else": 1}, "/else: 1 is not a schema"),
        ({"contains": "x"}, "/contains: 'x' is not a schema"),
        ({"propertyNames": 0}, "/propertyNames: 0 is not a schema"),
        ({"allOf": []}, "/allOf: must be a non-empty array of schemas"),
        ({"anyOf": {}}, "/anyOf: must be a non-empty array of schemas"),
        ({"oneOf": [True, "x"]}, "/oneOf/1: 'x' is not a schema"),
        ({"required": "path"}, "/required: must be an array of strings"),
        ({"required": ["a", 1]}, "/required: must be an array of strings"),
        ({"required": ["a", "a"]}, "/required: must not repeat a property name"),
        ({"enum": []}, "/enum: must be a non-empty array"),
        ({"enum": "a"}, "/enum: must be a non-empty array"),
        ({"minimum": "0"}, "/minimum: '0' is not a number"),
        ({"maximum": True}, "/maximum: True is not a number"),
        ({"exclusiveMinimum": None}, "/exclusiveMinimum: None is not a number"),
        ({"multipleOf": 0}, "/multipleOf: 0 is not a number greater than 0"),
        ({"multipleOf": -2.5}, "/multipleOf: -2.5 is not a number greater than 0"),
        ({"minLength": -1}, "/minLength: -1 is not a non-negative integer"),
        ({"maxLength": 1.5}, "/maxLength: 1.5 is not a non-negative integer"),
        ({"minItems": "1"}, "/minItems: '1' is not a non-negative integer"),
        ({"maxItems": False}, "/maxItems: False is not a non-negative integer"),
        ({"maxProperties": -3}, "/maxProperties: -3 is not a non-negative integer"),
        ({"uniqueItems": "yes"}, "/uniqueItems: 'yes' is not a boolean"),
        ({"pattern": "[a-"}, "/pattern: '[a-' is not a valid regular expression"),
        ({"pattern": 5}, "/pattern: 5 is not a valid regular expression"),
    ],
)
def test_each_invalid_kind_is_reported_with_its_path(schema, expected):
    # given a schema with exactly one structural fault, when checked, then one problem names it
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
            "/properties/a/type: 'strng' is not a JSON type",
            "/properties/b/items/properties/c/minimum: 'x' is not a number",
            "/allOf/0/required: must be an array of strings",
        ]
    )


def test_unknown_keywords_are_ignored():
    assert schema_problems({"x-anything": [1, 2], "description": 3, "title": None}) == []
