"""`python -m infra.cli …`: the same as the `toolcat` command (the bench runs it so)."""
from infra.cli import entrypoint

# Guarded: a process started by multiprocessing's spawn imports the parent's main module again.
if __name__ == "__main__":
    entrypoint()
