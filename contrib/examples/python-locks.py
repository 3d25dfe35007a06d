#!/usr/bin/env python3
"""python-locks.py: lockfs from Python with the standard library only.

Shows:
  run_once()   open(path, "x") (O_CREAT|O_EXCL): acquire or FileExistsError
               at once, never waits; the holder's note as the lock's data;
               rm releases.
  exclusive()  fcntl.flock on a lockfs file: waits (optionally at most
               `timeout` seconds: a signal ends the wait and leaves no lock
               behind), released by LOCK_UN (or the last close).
  lock_info()  the lock's text as a dict (owner, fence, expires, ...).

  python3 python-locks.py [MOUNTPOINT]     (default /mnt/locks)
"""
import contextlib
import fcntl
import os
import signal
import socket
import sys

MNT = sys.argv[1] if len(sys.argv) > 1 else "/mnt/locks"


def lock_info(path):
    """The lock's fields ("key", "state", "owner", "fence", ...)."""
    with open(path) as f:
        return dict(line.split(": ", 1) for line in f.read().splitlines()
                    if ": " in line)


def run_once(name, work):
    """Runs work() if this process gets the lock, else returns False."""
    path = os.path.join(MNT, name)
    try:
        f = open(path, "x")  # acquires, or FileExistsError if held
    except FileExistsError:  # not ours: never unlink it
        print(f"{name}: held by {lock_info(path).get('owner', '?')}")
        return False
    try:  # from here on the lock is ours
        with f:  # the holder's note, shown to every mount as "data:"
            f.write(f"{socket.gethostname()} pid {os.getpid()}\n")
        work()
    finally:
        os.unlink(path)  # release (with hold=pgrp it outlives the close)
    return True


class Timeout(Exception):
    pass


@contextlib.contextmanager
def exclusive(name, timeout=None):
    """with exclusive("deploy", timeout=30): ... (main thread only)."""
    path = os.path.join(MNT, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    old = None
    try:
        if timeout is not None:
            def expire(signum, frame):
                raise Timeout(f"{name}: not free within {timeout} s")
            old = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # FIFO among waiters of this host
        finally:
            if timeout is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
        yield lock_info(path)
        # LOCK_UN has released the lock when it returns; the last close
        # releases it too, but a moment after close() returns
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


if __name__ == "__main__":
    if not os.path.exists(os.path.join(MNT, ".lockfs", "status")):
        sys.exit(f"lockfs is not mounted on {MNT}")
    run_once("report", lambda: print("report: running here"))
    with exclusive("deploy", timeout=30) as info:
        print(f"deploy: holding with fence {info.get('fence')}")
    try:  # a non-blocking attempt
        with open(os.path.join(MNT, "deploy"), "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            print("deploy: got it without waiting")
    except BlockingIOError:
        print("deploy: busy")
