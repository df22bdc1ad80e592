"""Secret references of MCP server entries, resolved only when a connection is opened.

A reference is `SCHEME:NAME`; the scheme picks a resolver. One ships: `env:NAME`, the variable NAME of the
environment toolcat runs in. To add another (a vault, a keyring), write a function taking the NAME and
answering the value (or raising `UnresolvedSecret`, which must not contain the value), and add it to
`RESOLVERS` under its scheme. Values live only in the connection being opened: never stored, logged, or
repeated in an error (errors name the reference, and the server's own output is scrubbed of them)."""
from __future__ import annotations

from collections.abc import Callable

from domain.errors import CatalogRuleError
from infra.settings import environment_value


class UnresolvedSecret(CatalogRuleError):
    code = "unresolved_secret"


def _from_environment(name: str) -> str:
    value = environment_value(name)
    if value is None:
        raise UnresolvedSecret(f"the environment has no variable {name}", variable=name)
    return value


Resolver = Callable[[str], str]
RESOLVERS: dict[str, Resolver] = {"env": _from_environment}


def resolve(ref: str) -> str:
    scheme, _, name = ref.partition(":")
    resolver = RESOLVERS.get(scheme)
    if resolver is None:
        raise UnresolvedSecret(f"no resolver for secret reference {ref} (schemes: {', '.join(sorted(RESOLVERS))})",
                               ref=ref)
    try:
        return resolver(name)
    except UnresolvedSecret as error:
        raise UnresolvedSecret(f"secret reference {ref} cannot be resolved: {error.message}", ref=ref) from None


def resolve_all(refs: dict[str, str]) -> dict[str, str]:
    """key → value for key → reference."""
    return {key: resolve(ref) for key, ref in refs.items()}
