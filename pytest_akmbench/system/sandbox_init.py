"""The first process inside a cell's sandbox (docs/architecture.md, "Isolation").

It runs as ``python -I -S -c <exec this file's text, from an inherited memfd> [--uid U --gid G
--lifeline FD --chdir DIR] [--relay PORT SOCKET] -- argv``,
started by bubblewrap as the namespace's PID 1, and is plain standard library so it needs
nothing of the package inside the sandbox. Two jobs, both of which must happen inside:

* **Drop root.** When the bench runs as root, bubblewrap starts us as uid 0 with only
  CAP_SETUID and CAP_SETGID; we switch to an unprivileged uid and gid for good (the kernel
  clears every capability on that switch, and bubblewrap set no-new-privileges), so nothing the
  agent runs is root on the host: kernel interfaces that trust uid 0 stay shut.
* **Reach the model.** The cell's network namespace has loopback only. With ``--relay`` we
  listen on 127.0.0.1:PORT there and carry each connection to the harness's model forwarder
  through the Unix socket SOCKET (bound into the sandbox); that is the cell's only way out.

Dropping root also clears bwrap's ``--die-with-parent`` signal, and bwrap could not deliver it
to another uid anyway, so with ``--uid`` the harness passes ``--lifeline FD``: the read end of a
pipe whose write end only the harness holds. We stay PID 1, run the command as our child, and
exit the moment that pipe reads EOF (the harness is gone, crashed or killed); the kernel then
kills everything left in the namespace. We also reap every orphan re-parented to us, forward
SIGTERM/SIGINT/SIGHUP to the command, and exit with its status when it ends. With neither
option we simply exec the command, which becomes PID 1 itself.

Every cell pays for this interpreter's start, so it imports only builtin modules, and the socket
machinery only when it relays.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the signal module without its enums: start-up time
import _thread
import os
import sys

CHUNK = 65536


def _drop(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit(f"sandbox init: could not drop to uid {uid}")
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise SystemExit("sandbox init: root could be regained after the drop")


def _watch(fd: int) -> None:
    """Exit, taking the namespace along, once the harness's end of the lifeline is closed."""
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    os._exit(137)


def _relay(port: int, path: str) -> None:
    """Carry each connection to 127.0.0.1:``port`` to the Unix socket ``path`` (a thread)."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)

    def pump(src: socket.socket, dst: socket.socket, done: _thread.LockType | None) -> None:
        try:
            while data := src.recv(CHUNK):
                dst.sendall(data)
        except OSError:
            pass
        for sock, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                sock.shutdown(how)
            except OSError:
                pass
        if done is not None:
            done.release()

    def carry(conn: socket.socket) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            conn.close()
            upstream.close()
            return
        back = _thread.allocate_lock()
        back.acquire()
        _thread.start_new_thread(pump, (upstream, conn, back))
        pump(conn, upstream, None)
        back.acquire()  # the answer has been carried back
        conn.close()
        upstream.close()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            _thread.start_new_thread(carry, (conn,))

    _thread.start_new_thread(serve, ())


def _status(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _option(args: list[str], name: str, count: int) -> list[str] | None:
    if name not in args[: args.index("--")]:
        return None
    at = args.index(name)
    return args[at + 1 : at + 1 + count]


def main(args: list[str]) -> int:
    if "--" not in args:
        raise SystemExit("sandbox init: no command after --")
    argv = args[args.index("--") + 1 :]
    ids, relay = _option(args, "--uid", 3), _option(args, "--relay", 2)
    lifeline, cwd = _option(args, "--lifeline", 1), _option(args, "--chdir", 1)
    # Nothing the harness passed in reaches the command but its stdio (this code's own file
    # among them); the lifeline stays with us alone.
    keep = int(lifeline[0]) if lifeline is not None else 2
    os.closerange(3, keep)
    os.closerange(max(3, keep + 1), 1 << 16)
    if relay is not None:
        _relay(int(relay[0]), relay[1])  # bound before the switch: whatever the port
    if ids is not None:
        _drop(int(ids[0]), int(ids[2]))
    if cwd is not None:
        os.chdir(cwd[0])
        os.environ["PWD"] = cwd[0]  # bwrap set it to where it started us; an agent may trust PWD
    if relay is None and lifeline is None:
        os.execvp(argv[0], argv)
    if lifeline is not None:
        try:
            os.fstat(int(lifeline[0]))
        except OSError:
            raise SystemExit(f"sandbox init: lifeline fd {lifeline[0]} is not open") from None
        _thread.start_new_thread(_watch, (int(lifeline[0]),))
    child = os.fork()
    if child == 0:
        try:
            if lifeline is not None:
                os.close(int(lifeline[0]))
            os.execvp(argv[0], argv)
        except OSError as err:
            os.write(2, f"sandbox init: cannot run {argv[0]}: {err}\n".encode())
        finally:
            os._exit(127)
    for signum in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(signum, lambda s, _f: os.kill(child, s))
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 0
        if pid == child:
            return _status(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
