"""Log-directory failure: an I/O error offlines its whole directory (Kafka's ``LogDirFailureChannel``).

A disk that failed once cannot be trusted again, so Kafka does not retry a failed write: the
first ``IOException`` in a log directory takes every partition in that directory offline. The
storage layer turns the operating system's ``OSError`` into a typed
:class:`~kafkalab.errors.LogDirFailureError` naming the directory; the broker records it in a
:class:`LogDirFailureChannel`, answers ``KAFKA_STORAGE_ERROR`` (56) for that directory's
partitions from then on, and the process that runs the broker exits once no directory is left
online (Kafka: "Shutdown broker because all log dirs in ... have failed")::

    Log.append_as_leader --OSError--> LogDirFailureError(log_dir)      storage (no policy)
        --> broker: channel.add_offline(error); partitions there answer 56   broker (sans-I/O)
        --> adapter: channel.all_offline? then stop and exit non-zero      server / CLI

Worked example: the data directory ``/tmp/kl`` is deleted under a running broker. The next
segment roll cannot create ``/tmp/kl/orders-0/00000000000000000042.log``; ``Log.roll`` raises
``LogDirFailureError("Error while rolling log segment for orders-0 in dir /tmp/kl: [Errno 2]
...", log_dir="/tmp/kl")``, the Produce answers error 56, and the server, whose only directory
is now offline, shuts down with exit status 1.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from kafkalab.errors import LogDirFailureError, StorageError

P = ParamSpec("P")
R = TypeVar("R")


def _is_io_error(error: BaseException) -> bool:
    """An ``OSError``, or a :class:`StorageError` that one caused (a segment that cannot open
    its file): both mean the disk failed. A corrupt file is a different matter."""
    if isinstance(error, OSError):
        return True
    return (isinstance(error, StorageError) and not isinstance(error, LogDirFailureError)
            and isinstance(error.__cause__, OSError))


@contextmanager
def io_errors_offline(log_dir: Path, action: str) -> Iterator[None]:
    """Turn an I/O error raised inside the block into a :class:`LogDirFailureError` for
    ``log_dir`` (Kafka's ``LocalLog.maybeHandleIOException``)."""
    try:
        yield
    except (OSError, StorageError) as error:
        if not _is_io_error(error):
            raise
        raise LogDirFailureError(f"{action} in dir {log_dir}: {error}", log_dir=str(log_dir)) from error


class _InLogDir(Protocol):
    @property
    def directory(self) -> Path: ...


S = TypeVar("S", bound=_InLogDir)


def raise_if_io_error(error: OSError | StorageError, log: _InLogDir, action: str) -> None:
    """Raise a :class:`LogDirFailureError` for the directory holding ``log`` when ``error``
    is an I/O error; return otherwise, so the caller re-raises ``error`` unchanged.

    The one translation behind :func:`offline_on_io_error`, and what a hot path that guards
    itself with a plain ``try`` (no wrapper call per append) calls in its ``except``."""
    if not _is_io_error(error):
        return
    log_dir = log.directory.parent
    raise LogDirFailureError(
        f"{action} for {log.directory.name} in dir {log_dir}: {error}", log_dir=str(log_dir)
    ) from error


def offline_on_io_error(action: str) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """Decorate a log's method so that an I/O error becomes a :class:`LogDirFailureError` for
    the directory holding the log; ``action`` says what was attempted."""

    def decorate(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        @functools.wraps(method)
        def guarded(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return method(self, *args, **kwargs)
            except (OSError, StorageError) as error:
                raise_if_io_error(error, self, action)
                raise

        return guarded

    return decorate


class LogDirFailureChannel:
    """Which log directories are offline, and why. Not thread-safe; owned by the broker.

    A directory goes offline once and stays offline until the process restarts, as in Kafka.
    """

    def __init__(self, log_dirs: Iterable[Path | str]) -> None:
        self.log_dirs = [str(d) for d in log_dirs]
        self.offline: dict[str, str] = {}  # log dir -> the error that took it offline

    def add_offline(self, error: LogDirFailureError) -> bool:
        """Record ``error``'s directory as offline; True if it was online until now."""
        if error.log_dir in self.offline:
            return False
        self.offline[error.log_dir] = str(error)
        return True

    def is_offline(self, log_dir: Path | str) -> bool:
        return str(log_dir) in self.offline

    @property
    def all_offline(self) -> bool:
        return bool(self.log_dirs) and all(d in self.offline for d in self.log_dirs)

    def shutdown_message(self) -> str:
        """Kafka's fatal line when no directory is left, with each directory's error."""
        reasons = "; ".join(f"{d}: {reason}" for d, reason in self.offline.items())
        return f"Shutdown broker because all log dirs in {', '.join(self.log_dirs)} have failed ({reasons})"
