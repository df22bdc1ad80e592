"""Manifest files: YAML (PyYAML) or TOML (the standard tomllib) in, YAML out."""
from __future__ import annotations

import tomllib
from typing import Any

import yaml
from pydantic import ValidationError

from domain.errors import UsageError
from domain.manifest import Manifest
from infra.cli.registry import read_text_file


def parse_manifest(text: str, name: str) -> Manifest:
    """A manifest from a file's text; TOML when the name ends in .toml, else YAML (JSON is YAML too)."""
    try:
        data: Any = tomllib.loads(text) if name.endswith(".toml") else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as error:
        raise UsageError(f"{name} is not a readable manifest: {error}", path=name) from error
    try:
        return Manifest.model_validate(data or {})
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'manifest'}: {e['msg']}" for e in error.errors())
        raise UsageError(f"{name} is not a valid manifest: {problems}", path=name) from error


def read_manifest(path: str) -> Manifest:
    return parse_manifest(read_text_file(path, "the manifest"), path)


def manifest_yaml(manifest: Manifest) -> str:
    return yaml.safe_dump(manifest.document(), sort_keys=False, allow_unicode=True, width=120)
