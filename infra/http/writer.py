"""The server's one writer: every write command runs on one thread, one at a time, and the commands that
queued while the writer was busy are committed to the store together (group commit).

Run one at a time under a lock, each in its own store transaction, the commands of a busy server spent
more than half of their time in BEGIN and COMMIT (py-spy under the serve bench: 243 of 418 samples; the
fsync waits for a disk the read model's WAL also writes to), while the others queued behind them
(≈ 30–45 ms at 200 writes/s). Grouped, they share one BEGIN and one COMMIT. Each command keeps its own
answer, idempotency key and conflict check; a command that fails is undone alone (a savepoint,
infra/held_transaction.py); and no command is answered before the COMMIT that records it. With a store
other than a SQLite file each command commits on its own, as before.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from domain.catalog import Catalog
from domain.errors import Unavailable
from infra.held_transaction import HeldTransaction

# Commands at most in one group: the first of a group is answered only once the last has run.
GROUP_LIMIT = 32


class _Command:
    def __init__(self, call: Callable[[], Any]) -> None:
        self.call, self.answer = call, Future[Any]()  # answered once committed
        self.result: Any = None
        self.error: BaseException | None = None

    def execute(self) -> None:
        try:
            self.result = self.call()
        except BaseException as error:  # the request's thread raises it; the writer goes on
            self.error = error


class Writer:
    def __init__(self, catalog: Catalog, committed: Callable[[int], None]) -> None:
        """`committed(count)`: called after each commit of `count` commands, before they are answered."""
        self._catalog, self._committed = catalog, committed
        self._held = HeldTransaction.of(catalog)
        self._queue: queue.SimpleQueue[_Command | None] = queue.SimpleQueue()
        self._uncommitted: list[_Command] = []  # run, their writes in the held transaction, not answered
        self._thread = threading.Thread(target=self._serve, name="toolcat-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """After the commands queued so far."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def submit(self, call: Callable[[], Any]) -> Future[Any]:
        """`call()` queued for the writer: its result (or its error) once committed. The server's routes
        await it in the event loop (asyncio.wrap_future), with no thread of their own waiting."""
        if not self._thread.is_alive():
            raise Unavailable("the server is stopping: it takes no more writes")
        command = _Command(call)
        self._queue.put(command)
        return command.answer

    @property
    def queued(self) -> int:
        """Commands waiting for the writer."""
        return self._queue.qsize()

    def flush(self) -> None:
        """(In a command the writer runs; elsewhere nothing.) Commit what the group wrote so far and answer
        the commands run before: a command about to read the read model needs the follower, which sees only
        what is committed, to have applied its group's writes."""
        if threading.current_thread() is self._thread and self._held is not None and self._held.is_open:
            self._commit()

    def _serve(self) -> None:
        while (first := self._queue.get()) is not None:
            group, stopping = self._take(first)
            for command in group:
                self._execute(command)
            self._commit()
            if stopping:
                return

    def _take(self, first: _Command) -> tuple[list[_Command], bool]:
        """`first` and the commands queued behind it (up to GROUP_LIMIT); whether stop was asked meanwhile."""
        group = [first]
        while len(group) < GROUP_LIMIT:
            try:
                command = self._queue.get_nowait()
            except queue.Empty:
                break
            if command is None:
                return group, True
            group.append(command)
        return group, False

    def _execute(self, command: _Command) -> None:
        if self._held is not None and not self._held.is_open:
            try:
                self._held.begin()
            except Exception as error:  # the store's write lock not had in time, or the store unreachable
                command.error = Unavailable(f"the event store could not begin a write: {error}")
        if command.error is None:
            command.execute()
        self._uncommitted.append(command)

    def _commit(self) -> None:
        commands, self._uncommitted = self._uncommitted, []
        if self._held is not None and self._held.is_open:
            try:
                self._held.commit()
            except Exception as error:
                # What the cached aggregates show of these commands was never recorded: read them again.
                self._catalog.reads.forget_all()
                lost = Unavailable(f"the event store could not commit: {error}; nothing of this command was "
                                   "recorded, run it again")
                for command in commands:
                    command.result, command.error = None, command.error or lost
        if commands:  # (a flush may commit only the writes of the command that asked for it)
            self._committed(len(commands))
        for command in commands:
            if command.error is not None:
                command.answer.set_exception(command.error)
            else:
                command.answer.set_result(command.result)
