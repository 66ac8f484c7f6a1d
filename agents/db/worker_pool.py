"""Worker processes for one database, and a deadline no request can outlive.

Each :class:`WorkerPool` keeps up to ``size`` workers (:mod:`agents.db.query_worker`) with the same
database open. A request goes to an idle worker; if it has not answered ``seconds`` + a short
grace after it was sent, the worker is killed (through :mod:`agents.db.zygote`) and
:class:`WorkerStopped` is raised. A killed worker is replaced on the next request, so the
database stays usable, and because a pool has more than one worker, another session's query
does not wait behind the one being stopped.

Idle workers are cheap but not free, so at most :data:`MAX_IDLE_WORKERS` are kept across all
pools of this process; the least recently used one beyond that is retired and respawned when
its database is next used (a few milliseconds for a file, the upload's copy time otherwise).
"""

from __future__ import annotations

import marshal
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

from agents.db.query_worker import WORKER_MEMORY_BYTES
from agents.db.zygote import Zygote, ZygoteError, zygote

GRACE_SECONDS = 0.5     # after a request's own limit, before its worker is killed
OPEN_SECONDS = 60.0     # for a worker to open its database (an upload is copied in)
POOL_SIZE = 2           # workers per database: one can be stopped while another answers
MAX_IDLE_WORKERS = 8    # idle workers kept across all databases of this process
MAX_REPLY_BYTES = 1 << 30


class PoolError(RuntimeError):
    """No worker could run the request; the message says why."""


class PoolClosed(PoolError):
    """The database was closed."""


class WorkerStopped(Exception):
    """The worker did not answer: ``reason`` is "timeout" (it was killed at the deadline) or
    "ended" (it died, for instance at its memory limit)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(eq=False)
class _Worker:
    pid: int
    channel: Connection
    pool: "WorkerPool" = field(repr=False)
    template: Zygote = field(repr=False)  # the process that forked it, and reaps it


def _kill(worker: _Worker) -> None:
    worker.channel.close()
    worker.template.kill(worker.pid)  # a no-op when the template is gone (and the worker with it)


def _gone(worker: _Worker) -> bool:
    """An idle worker never writes, so anything to read (end of file) means it has died."""
    try:
        return worker.channel.poll(0)
    except (OSError, ValueError):
        return True


# -- idle workers across pools ----------------------------------------------------------------

_idle_lock = threading.Lock()
_idle: OrderedDict[_Worker, None] = OrderedDict()


def _now_idle(worker: _Worker) -> None:
    """Note ``worker`` as the most recently used idle one; retire the oldest beyond the cap."""
    with _idle_lock:
        _idle[worker] = None
        _idle.move_to_end(worker)
        surplus = [_idle.popitem(last=False)[0] for _ in range(len(_idle) - MAX_IDLE_WORKERS)]
    for victim in surplus:  # outside the lock: a pool's lock is never taken inside this one
        victim.pool._retire(victim)


def _now_busy(worker: _Worker) -> None:
    with _idle_lock:
        _idle.pop(worker, None)


class WorkerPool:
    """Workers with one database open: a ``file:`` URI or an upload's bytes."""

    def __init__(self, *, uri: str | None = None, data: bytes | None = None,
                 size: int = POOL_SIZE, memory: int = WORKER_MEMORY_BYTES):
        if (uri is None) == (data is None):
            raise ValueError("a pool needs either a URI or the database's bytes")
        self._uri, self._data = uri, data
        self._size, self._memory = max(1, size), memory
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._live = 0
        self._closed = False

    # -- workers ----------------------------------------------------------------------------
    def _spawn(self) -> _Worker:
        try:
            template = zygote()
            pid, sock = template.spawn()
        except ZygoteError as exc:
            raise PoolError(str(exc)) from None
        worker = _Worker(pid, Connection(sock.detach()), self, template)
        opening = {"op": "open", "uri": self._uri, "memory": self._memory,
                   "size": len(self._data) if self._data is not None else 0}
        try:
            worker.channel.send_bytes(marshal.dumps(opening))
            if self._data is not None:
                worker.channel.send_bytes(self._data)
            if not worker.channel.poll(OPEN_SECONDS):
                raise PoolError(f"the database took longer than {OPEN_SECONDS:g} s to load")
            reply = marshal.loads(worker.channel.recv_bytes(MAX_REPLY_BYTES))
        except (OSError, EOFError, ValueError, TypeError) as exc:
            _kill(worker)
            raise PoolError(f"the query worker stopped while loading the database ({exc})"
                            ) from None
        except PoolError:
            _kill(worker)
            raise
        if not reply.get("ok"):
            _kill(worker)
            raise PoolError(str(reply.get("error") or "the database cannot be opened"))
        return worker

    def _acquire(self) -> _Worker:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        raise PoolClosed("the database is closed")
                    if self._idle:
                        worker = self._idle.pop()
                        break
                    if self._live < self._size:
                        self._live += 1
                        worker = None
                        break
                    self._cond.wait()
            if worker is None:
                break
            _now_busy(worker)
            if not _gone(worker):
                return worker
            self._release(worker, healthy=False)
        try:
            return self._spawn()
        except BaseException:
            with self._cond:
                self._live -= 1
                self._cond.notify()
            raise

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self._cond:
            keep = healthy and not self._closed
            if keep:
                self._idle.append(worker)
            else:
                self._live -= 1
            self._cond.notify()
        if keep:
            _now_idle(worker)
        else:
            _kill(worker)

    def _retire(self, worker: _Worker) -> None:
        """Stop ``worker`` if it is still idle in this pool (the pool respawns on demand)."""
        with self._cond:
            if worker not in self._idle:
                return
            self._idle.remove(worker)
            self._live -= 1
            self._cond.notify()
        _kill(worker)

    # -- requests ---------------------------------------------------------------------------
    def call(self, request: dict, *, seconds: float) -> dict:
        """Send ``request`` to a worker and return its reply.

        Raises :class:`WorkerStopped` when no reply came within ``seconds`` + the grace (the
        worker is killed) or the worker died, :class:`PoolError` when no worker could start.
        """
        worker = self._acquire()
        healthy = False
        try:
            worker.channel.send_bytes(marshal.dumps(request))
            if not worker.channel.poll(max(0.0, seconds) + GRACE_SECONDS):
                raise WorkerStopped("timeout")
            reply = marshal.loads(worker.channel.recv_bytes(MAX_REPLY_BYTES))
            if not isinstance(reply, dict):
                raise WorkerStopped("ended")
            healthy = True
            return reply
        except (OSError, EOFError, ValueError, TypeError):
            raise WorkerStopped("ended") from None
        finally:
            self._release(worker, healthy)

    def close(self) -> None:
        """Stop every worker; later requests raise :class:`PoolClosed`."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._live -= len(idle)
            self._cond.notify_all()
        for worker in idle:
            _now_busy(worker)
            _kill(worker)
