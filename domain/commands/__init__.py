"""The write commands both entry points call: the command line builds one from its arguments, the server
reads one as a request's JSON body; either way it is validated once and carried out the same way
(`CatalogCommand.run`, or infra/writing.py for the few that read the read model too)."""
from __future__ import annotations

from domain.commands import aliases, catalog, mcp, proposals, routing, subjects, tools
from domain.commands.base import CatalogCommand, Command

__all__ = ["WRITES", "CatalogCommand", "Command"]


def _every(kind: type[Command]) -> list[type[Command]]:
    return [found for sub in kind.__subclasses__() for found in (sub, *_every(sub))]


# Every write command by the name it is typed with ("grant add"), in the order of the groups' modules.
WRITES: dict[str, type[Command]] = {kind.name: kind for module in (catalog, tools, aliases, subjects, routing,
                                                                     proposals, mcp)
                                    for kind in vars(module).values()
                                    if isinstance(kind, type) and issubclass(kind, Command) and kind.name
                                    and kind.__module__ == module.__name__}
