#!/usr/bin/python3
"""Helper of realprog_spawn.sh: a Python server that starts child processes
in every way Python offers while it holds TCP connections with data read
ahead, and the peer that talks to it.

  realprog_spawn_server.py server PORTFILE   listen on 127.0.0.1:0, write the
                                             port to PORTFILE, serve the peer
  realprog_spawn_server.py peer PORT         connect and follow the protocol

Messages: kind (1 byte), length (4 bytes, big endian), payload,
sha256(payload) (32 bytes); the receiver checks every digest.

  S name   server -> peer, on "long": a step starts; open a "fresh" connection
  D data   peer -> server: 40 warm-up messages echoed back (D), then the
           step's block of 20000 bytes (seeded: the same on every run)
  G name   server -> peer: send the step's block now
  N text   server or a child -> peer: a note, printed in arrival order
  B data   server -> peer: the server's block of 30000 bytes; answered by
  A digest peer -> server: sha256 of the B block as the peer received it
  Q        server -> peer: close this connection

"long" is opened first and stays open through every step (after the first
spawn it is a socket a child had); each step opens a "fresh" one, warmed up
(read in small pieces, so the engine arms its receive: RINGSOCK_ARM_AFTER)
after the previous spawn.  For each step the server waits until the peer's
blocks are readable on both (FIONREAD; under ringsock the engine has read
them ahead into its queue), reads only their headers, starts a child the
step's way (subprocess.run with close_fds=False, subprocess.run with
close_fds=True, subprocess.run with pass_fds=[fresh] whose child writes a
note on it, os.posix_spawn, os.system, subprocess.Popen with stdout=PIPE,
asyncio.create_subprocess_exec under a SIGCHLD-driven child watcher), checks
that the SIGTERM, SIGUSR1 and SIGCHLD handlers installed with signal.signal
still run, reads the rest of both blocks and sends its own.  Python's
subprocess starts children with vfork: the child resets signal handlers and
closes descriptors before exec, in the parent's memory.

Standard output is deterministic: the test compares a plain run with runs
under LD_PRELOAD=libringsock.so.  Standard error says, per step, how much of
each block the kernel still held (readahead ... kernel=0: the engine had it).
"""
import asyncio
import fcntl
import hashlib
import os
import random
import selectors
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
import warnings

PY = "/usr/bin/python3"
DEADLINE = 15.0  # seconds for any one wait; the shell's timeout bounds the run
STEPS = ["run_keep_fds", "run_close_fds", "run_pass_fds", "posix_spawn", "system", "popen_pipe", "asyncio_exec"]


def out(*a):
    print(*a, flush=True)


def block(seed, n):
    return random.Random(seed).randbytes(n)


def frame(kind, payload):
    return kind + struct.pack(">I", len(payload)) + payload + hashlib.sha256(payload).digest()


# ---------------------------------------------------------------- server --

class Conn:
    """The server's side: a nonblocking socket waited on with selectors
    (epoll), read in small pieces so the engine takes the socket on."""

    def __init__(self, sock):
        self.s = sock
        self.s.setblocking(False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.s, selectors.EVENT_READ)
        self.buf = b""

    def wait_readable(self):
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            if self.sel.select(timeout=0.5):
                return
        raise TimeoutError("peer sent nothing")

    def recv_exact(self, n, piece=1024):
        while len(self.buf) < n:
            try:
                d = self.s.recv(min(piece, n - len(self.buf)))
            except BlockingIOError:
                self.wait_readable()
                continue
            if not d:
                raise EOFError("peer closed")
            self.buf += d
        r, self.buf = self.buf[:n], self.buf[n:]
        return r

    def recv_msg(self, want):
        kind = self.recv_exact(1)
        (n,) = struct.unpack(">I", self.recv_exact(4))
        payload = self.recv_exact(n)
        digest = self.recv_exact(32)
        if kind != want:
            raise ValueError("expected %r, got %r" % (want, kind))
        return payload, digest == hashlib.sha256(payload).digest()

    def send(self, data):
        view = memoryview(data)
        end = time.monotonic() + DEADLINE
        while view:
            try:
                k = self.s.send(view[:8192])
                view = view[k:]
            except BlockingIOError:
                if time.monotonic() > end:
                    raise TimeoutError("peer does not read")
                time.sleep(0.01)

    def pending(self):
        b = fcntl.ioctl(self.s.fileno(), termios.FIONREAD, b"\0\0\0\0")
        return struct.unpack("i", b)[0]


def kernel_rx_queue(sock):
    """Bytes in the kernel's receive queue of this socket (/proc/net/tcp),
    or -1 when not found."""
    ino = str(os.fstat(sock.fileno()).st_ino)
    with open("/proc/net/tcp") as f:
        for line in f:
            x = line.split()
            if len(x) > 9 and x[9] == ino:
                return int(x[4].split(":")[1], 16)
    return -1


fired = set()


def handler(sig, _frame):
    fired.add(sig)


WATCHED = [(signal.SIGTERM, "TERM"), (signal.SIGUSR1, "USR1"), (signal.SIGCHLD, "CHLD")]


def install_handlers():
    for sig, _ in WATCHED:
        signal.signal(sig, handler)


def check_signals(step, watched=WATCHED):
    """Raise each signal at ourselves: its handler must run.  A lost handler
    shows as LOST, or kills the process (SIGTERM, SIGUSR1 by default)."""
    res = []
    for sig, name in watched:
        fired.discard(sig)
        os.kill(os.getpid(), sig)
        # Python runs the handler at the next bytecode boundary; give a
        # stray delivery a moment (never needed when the handler survives).
        for _ in range(100):
            if sig in fired:
                break
            time.sleep(0.01)
        res.append("%s=%s" % (name, "ok" if sig in fired else "LOST"))
    ok = all(r.endswith("=ok") for r in res)
    out("%s: signal handlers after the spawn: %s" % (step, " ".join(res)))
    return ok


CHILD_WRITE = r"""
import hashlib, os, struct, sys
fd = int(sys.argv[1])
p = ("note from the pass_fds child, written on the inherited socket").encode()
os.write(fd, b"N" + struct.pack(">I", len(p)) + p + hashlib.sha256(p).digest())
print("child wrote %d bytes on the socket" % (len(p) + 37))
"""


def spawn(step, c):
    """Start a child the step's way; return a line describing its result."""
    fd = c.s.fileno()
    if step == "run_keep_fds":
        # close_fds=False and a cwd: still _posixsubprocess's vfork (not
        # posix_spawn); the child resets signal handlers but closes nothing.
        r = subprocess.run(["/bin/sh", "-c", "echo kept"], close_fds=False, cwd="/",
                           stdout=subprocess.PIPE, timeout=DEADLINE)
        return "rc=%d out=%s" % (r.returncode, r.stdout.decode().strip())
    if step == "run_close_fds":
        r = subprocess.run(["/bin/sh", "-c", 'if [ -e /proc/self/fd/%d ]; then echo open; else echo closed; fi' % fd],
                           close_fds=True, stdout=subprocess.PIPE, timeout=DEADLINE)
        return "rc=%d socket in child: %s" % (r.returncode, r.stdout.decode().strip())
    if step == "run_pass_fds":
        # A note queued before the spawn must reach the peer before what
        # the child writes on the same socket.
        c.send(frame(b"N", b"note from the parent, sent before the pass_fds child"))
        r = subprocess.run([PY, "-c", CHILD_WRITE, str(fd)], pass_fds=[fd],
                           stdout=subprocess.PIPE, timeout=DEADLINE)
        return "rc=%d %s" % (r.returncode, r.stdout.decode().strip())
    if step == "posix_spawn":
        pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 7"], dict(os.environ))
        _, st = os.waitpid(pid, 0)
        return "exit status %d" % os.waitstatus_to_exitcode(st)
    if step == "system":
        st = os.system("exit 3")
        return "exit status %d" % os.waitstatus_to_exitcode(st)
    if step == "popen_pipe":
        p = subprocess.Popen(["/bin/sh", "-c", "echo popen-out; tr a-z A-Z"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
        o, _ = p.communicate(b"through the pipe\n", timeout=DEADLINE)
        return "rc=%d out=%r" % (p.returncode, o)
    raise ValueError(step)


async def asyncio_step(conns, step):
    """create_subprocess_exec with a watcher woken by SIGCHLD; the rest of
    the peer's blocks is read on the same loop (loop.sock_recv)."""
    loop = asyncio.get_running_loop()
    lines = []
    for i in range(2):
        # The child waits for its stdin to close, so it exits after the
        # watcher has taken it on: only SIGCHLD can tell the watcher.
        p = await asyncio.create_subprocess_exec("/bin/sh", "-c", "cat; exit 5", stdin=subprocess.PIPE,
                                                 stdout=subprocess.PIPE)
        try:
            o, _ = await asyncio.wait_for(p.communicate(b"asyncio child %d\n" % i), DEADLINE)
            lines.append("child %d rc=%d out=%r" % (i, p.returncode, o))
        except asyncio.TimeoutError:
            p.kill()
            lines.append("child %d TIMEOUT waiting for its exit (SIGCHLD handler lost?)" % i)
    # SIGTERM and SIGUSR1 keep our handlers; SIGCHLD is the watcher's now.
    ok = check_signals(step, WATCHED[:2])
    for c in conns:
        while len(c.buf) < BLOCK + 32:
            d = await asyncio.wait_for(loop.sock_recv(c.s, 1024), DEADLINE)
            if not d:
                raise EOFError("peer closed")
            c.buf += d
    return lines, ok


BLOCK = 20000  # the peer's D block
MINE = 30000   # the server's B block


def warm_up(c, name):
    """Echo 40 messages of various sizes, read in small pieces, so that the
    engine arms the socket's receive (RINGSOCK_ARM_AFTER reads)."""
    bad = 0
    for _ in range(40):
        payload, good = c.recv_msg(b"D")
        bad += not good
        c.send(frame(b"D", payload))
    out("%s: warm-up, 40 messages echoed: %s" % (name, "ok" if not bad else "BAD"))
    return bad


def serve(portfile):
    install_handlers()
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(ls.getsockname()[1]))
    os.rename(tmp, portfile)
    ls.settimeout(DEADLINE)
    failed = 0
    # "long" stays open through every step (after the first spawn it is a
    # socket the children may have had); each step gets a "fresh"
    # connection, opened and armed since the previous spawn.
    long = Conn(ls.accept()[0])
    failed += warm_up(long, "long")

    for k, step in enumerate(STEPS):
        long.send(frame(b"S", step.encode()))
        fresh = Conn(ls.accept()[0])
        failed += warm_up(fresh, step + " fresh")
        conns = [(fresh, "fresh", 1000 + 2 * k), (long, "long", 1001 + 2 * k)]
        for c, name, _ in conns:
            c.send(frame(b"G", ("%s %s" % (step, name)).encode()))
        # Wait until the peer's whole blocks are readable: under ringsock
        # the engine's receive has taken them from the kernel into its queue.
        want = 1 + 4 + BLOCK + 32
        for c, name, _ in conns:
            end = time.monotonic() + DEADLINE
            while c.pending() < want and time.monotonic() < end:
                c.sel.select(timeout=0.05)
            if c.pending() < want:
                out("%s: %s: the peer's block did not arrive" % (step, name))
                failed += 1
            # A wait through the engine collects what its receive took (the
            # engine's rings complete only inside io_uring_enter); plain,
            # this only costs a few short waits.
            for _ in range(5):
                if kernel_rx_queue(c.s) == 0:
                    break
                c.sel.select(timeout=0.01)
            # To standard error (not compared): where the block waits.
            # Plain, all of it is in the kernel's queue; under ringsock, on
            # an armed socket, the engine holds it.
            sys.stderr.write("readahead %s %s: readable=%d kernel=%d\n" %
                             (step, name, c.pending(), kernel_rx_queue(c.s)))
            sys.stderr.flush()
        # Read only the headers: the rest stays read ahead while the child runs.
        kinds = [c.recv_exact(1) + c.recv_exact(4)[:0] for c, _, _ in conns]
        if step == "asyncio_exec":
            old = hasattr(asyncio, "SafeChildWatcher")  # gone in Python 3.14
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                if old:
                    watcher = asyncio.SafeChildWatcher()
                    asyncio.set_child_watcher(watcher)
                loop = asyncio.new_event_loop()
                if old:
                    watcher.attach_loop(loop)
            try:
                lines, ok = loop.run_until_complete(asyncio_step([fresh, long], step))
            finally:
                loop.close()
                if old:
                    watcher.close()
            for ln in lines:
                out("%s: %s" % (step, ln))
                failed += "TIMEOUT" in ln
            failed += not ok
            # The watcher's SIGCHLD handler went with its loop: ours again.
            install_handlers()
            failed += not check_signals(step + " (after the loop)", WATCHED[2:])
        else:
            res = spawn(step, fresh)
            out("%s: child: %s" % (step, res))
            failed += not check_signals(step)
        for (c, name, seed), kind in zip(conns, kinds):
            body = c.recv_exact(BLOCK)
            digest = c.recv_exact(32)
            good = kind == b"D" and digest == hashlib.sha256(body).digest() and body == block(seed, BLOCK)
            out("%s: %s: the peer's block of %d bytes, read after the spawn: %s" %
                (step, name, len(body), "ok" if good else "CORRUPT"))
            failed += not good
        for c, name, seed in conns:
            mine = block(seed + 5000, MINE)
            c.send(frame(b"B", mine))
            ack, good = c.recv_msg(b"A")
            good = good and ack == hashlib.sha256(mine).digest()
            out("%s: %s: our block of %d bytes as the peer got it: %s" %
                (step, name, len(mine), "ok" if good else "CORRUPT"))
            failed += not good
        failed += not finish(fresh, step + " fresh")
    failed += not finish(long, "long")
    ls.close()
    out("server: %s" % ("all steps ok" if not failed else "%d checks FAILED" % failed))
    return 1 if failed else 0


def finish(c, name):
    """Q, then the peer closes: nothing else may arrive."""
    c.send(frame(b"Q", b""))
    try:
        rest = c.recv_exact(1)
        out("%s: unexpected data after Q: %r" % (name, rest))
        return False
    except EOFError:
        pass
    c.sel.close()
    c.s.close()
    return True


# ------------------------------------------------------------------ peer --

class PeerConn:
    """The peer's side: a blocking socket (the engine serves those too)."""

    def __init__(self, port, name):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
        self.name = name
        self.buf = bytearray()
        self.bad = 0
        rng = random.Random(len(name) * 7919)
        for _ in range(40):
            m = rng.randbytes(rng.choice([1, 7, 100, 1000, 1500, 3000, 9000]))
            self.s.sendall(frame(b"D", m))
            kind, payload, good = self.recv_msg()
            self.bad += not (good and kind == b"D" and payload == m)

    def recv_exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(4096)
            if not d:
                raise EOFError("server closed")
            self.buf.extend(d)
        r = bytes(self.buf[:n])
        del self.buf[:n]
        return r

    def recv_msg(self):
        kind = self.recv_exact(1)
        (n,) = struct.unpack(">I", self.recv_exact(4))
        payload = self.recv_exact(n)
        good = self.recv_exact(32) == hashlib.sha256(payload).digest()
        if not good:
            out("peer: %s: message %r with a bad digest" % (self.name, kind))
            self.bad += 1
        return kind, payload, good

    def expect(self, want):
        kind, payload, good = self.recv_msg()
        if kind != want:
            out("peer: %s: expected %r, got %r" % (self.name, want, kind))
            self.bad += 1
        return payload

    def until_block(self):
        """Print notes until the server's B block, then acknowledge it."""
        while True:
            kind, payload, good = self.recv_msg()
            if kind == b"N":
                out("peer: %s: note: %s" % (self.name, payload.decode()))
            elif kind == b"B":
                out("peer: %s: block of %d bytes, digest %s" % (self.name, len(payload), "ok" if good else "BAD"))
                self.s.sendall(frame(b"A", hashlib.sha256(payload).digest()))
                return
            else:
                out("peer: %s: unexpected message %r" % (self.name, kind))
                self.bad += 1
                raise ValueError("protocol")

    def close(self):
        self.expect(b"Q")
        self.s.close()
        return self.bad


def peer(port):
    failed = 0
    long = PeerConn(port, "long")
    k = 0
    while True:
        kind, payload, _ = long.recv_msg()
        if kind == b"Q":
            break
        step = payload.decode()
        out("peer: step %s" % step)
        fresh = PeerConn(port, step)
        for c, seed in ((fresh, 1000 + 2 * k), (long, 1001 + 2 * k)):
            out("peer: %s: go %s" % (c.name, c.expect(b"G").decode()))
            c.s.sendall(frame(b"D", block(seed, BLOCK)))
        fresh.until_block()
        long.until_block()
        failed += fresh.close()
        k += 1
    long.s.close()
    failed += long.bad
    out("peer: %s" % ("done" if not failed else "%d checks FAILED" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "server":
        sys.exit(serve(sys.argv[2]))
    sys.exit(peer(int(sys.argv[2])))
