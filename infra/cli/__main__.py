"""`python -m infra.cli …`: the same as the `toolcat` command (the bench runs it so)."""
from infra.cli import entrypoint

entrypoint()
