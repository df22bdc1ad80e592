"""What a write command is: a pydantic model of the command's own arguments, validated once, whichever
entry point made it. Its fields are named as the command line's options (their `dest`), which is also
the JSON body of `POST /v1/<noun>/<verb>`; who asks, why and under which idempotency key travel beside it
(a `Meta`), as the token, the body's `reason` and the `Idempotency-Key` header do over HTTP."""
from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from domain.base import Meta
    from domain.catalog import Catalog, WriteResult


class Command(BaseModel):
    """A write command. `name` is how it is typed ("grant add"); its path over HTTP follows from it."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    name: ClassVar[str] = ""


class CatalogCommand(Command):
    """A command the catalog carries out alone (no read model): `run` is its use case."""

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        raise NotImplementedError
