"""A clean template process that forks query workers on request.

Why it exists: a query stuck in one long SQLite step (a LIKE over megabytes, say) can only be
stopped by killing the process that runs it, so queries run in worker processes. Starting a
fresh Python for each worker costs about 0.6 s (importing sqlglot); forking one from a process
that has already imported everything a worker needs costs a few milliseconds. The app's own
process cannot be that template: it runs threads (Streamlit), and forking a threaded process can
copy a lock another thread holds. So this process is started once with :mod:`subprocess`, never
starts a thread, and forks on request.

The protocol, on a ``SOCK_SEQPACKET`` socket pair (one message each way per request):
``b"S"`` with the worker's end of a socket pair attached (``SCM_RIGHTS``) forks a worker serving
that socket and answers with its pid; ``b"K" + pid`` kills and reaps that worker and answers
``b"k"``. Children are reaped only when the client asks, so a pid the client holds always names
its own worker (a zombie at worst), never a recycled process. When the client goes away the
socket closes, and this process kills its workers and exits.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

_PID = struct.Struct("!q")
READY = b"R"
START_SECONDS = 60.0   # the template imports sqlglot; a loaded machine can be slow
REPLY_SECONDS = 30.0


class ZygoteError(RuntimeError):
    """The template process cannot start a worker; the message says why."""


class Zygote:
    """The client end: start workers, kill them. Thread-safe."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        env["MALLOC_ARENA_MAX"] = "2"  # keeps a worker's address space, hence its limit, honest
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "agents.db.zygote", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            ours.close()
            raise ZygoteError(f"cannot start the query process ({exc})") from None
        finally:
            theirs.close()
        self._socket = ours
        self._lock = threading.Lock()
        self._ready = False

    def _reply(self, size: int, seconds: float) -> bytes:
        self._socket.settimeout(seconds)
        try:
            data = self._socket.recv(size)
        except OSError as exc:
            raise ZygoteError(f"the query process does not answer ({exc})") from None
        if not data:
            raise ZygoteError("the query process has stopped")
        return data

    def spawn(self) -> tuple[int, socket.socket]:
        """A new worker: its pid and the socket to talk to it."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._lock:
                if not self._ready:
                    self._ready = self._reply(1, START_SECONDS) == READY
                socket.send_fds(self._socket, [b"S"], [theirs.fileno()])
                pid = _PID.unpack(self._reply(_PID.size, REPLY_SECONDS))[0]
        except (OSError, struct.error) as exc:
            ours.close()
            raise ZygoteError(f"cannot start a query worker ({exc})") from None
        finally:
            theirs.close()
        if pid <= 0:
            ours.close()
            raise ZygoteError("cannot start a query worker (fork failed)")
        return pid, ours

    def kill(self, pid: int) -> None:
        """Kill and reap the worker ``pid`` (a no-op when it has gone already)."""
        try:
            with self._lock:
                self._socket.send(b"K" + _PID.pack(pid))
                self._reply(1, REPLY_SECONDS)
        except (OSError, ZygoteError):
            pass  # the template is gone, and its workers with it

    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self, wait: float = 5.0) -> int | None:
        """Close the socket: the template kills its workers and exits. Its exit code, or None
        if it has not exited within ``wait`` seconds."""
        self._socket.close()
        try:
            return self._process.wait(wait)
        except subprocess.TimeoutExpired:
            return None


_lock = threading.Lock()
_current: tuple[int, Zygote] | None = None


def zygote() -> Zygote:
    """This process's template, started on first use (and again if it has died)."""
    global _current
    with _lock:
        if _current is None or _current[0] != os.getpid() or not _current[1].alive():
            _current = (os.getpid(), Zygote())
        return _current[1]


@atexit.register
def shutdown() -> None:
    """Stop the template and every worker now (at exit; a benchmark calls it to read their
    peak memory with ``getrusage(RUSAGE_CHILDREN)``). The next request starts a new one."""
    global _current
    with _lock:
        current, _current = _current, None
    if current is not None and current[0] == os.getpid():
        current[1].close()


# -- the template process ---------------------------------------------------------------------

def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _serve(control: socket.socket, run_worker) -> None:
    children: set[int] = set()
    try:
        while True:
            message, fds, _flags, _addr = socket.recv_fds(control, 16, 4)
            if not message:
                break
            if message[:1] == b"S" and fds:
                try:
                    pid = os.fork()
                except OSError:  # out of processes or memory: say so, keep serving
                    pid = -1
                if pid == 0:
                    control.close()
                    for extra in fds[1:]:
                        os.close(extra)
                    code = 1
                    try:
                        code = run_worker(fds[0])
                    finally:
                        os._exit(code)
                for fd in fds:
                    os.close(fd)
                if pid > 0:
                    children.add(pid)
                control.send(_PID.pack(pid))
            elif message[:1] == b"K" and len(message) == 1 + _PID.size:
                pid = _PID.unpack(message[1:])[0]
                if pid in children:
                    _kill(pid)
                    children.discard(pid)
                control.send(b"k")
            else:
                for fd in fds:
                    os.close(fd)
                control.send(_PID.pack(-1))
    except OSError:
        pass
    finally:
        for pid in children:
            _kill(pid)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the app, which stops workers
    # imported in the child only: the parent never needs the worker's loop, and the zygote
    # is started before anything else is imported, so its forks stay small
    from agents.db.query_worker import serve

    control = socket.socket(fileno=int(argv[1]))
    control.send(READY)
    _serve(control, serve)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
