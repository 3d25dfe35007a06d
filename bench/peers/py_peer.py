#!/usr/bin/python3
"""py_peer: python_dynamodb_lock (PyPI python-dynamodb-lock) timed the way
bench/cycle.c and bench/handoff.c time lockfs, for bench/cycle.sh --peers and
bench/handoff.sh --peers. The library and its pinned version come from the
bench's cache (bench/peers/peers.sh puts it on PYTHONPATH); boto3 is the
system's (Debian python3-boto3).

  py_peer.py cycle ENDPOINT TABLE N THREADS [--warmup W] [--samples FILE]
      THREADS threads of one DynamoDBLockClient, each on a key of its own,
      first W untimed cycles each (default 100: boto3's connections and the
      interpreter settle), then N timed cycles each: acquire_lock (a
      consistent GetItem, then a conditional PutItem) + release_lock (a
      conditional DeleteItem). Prints
      "python_dynamodb_lock cycles=.. threads=.. failures=.. total_s=..
      per_s=.. p50_us=.. p90_us=.. p99_us=..", the line bench_cycle prints.

  py_peer.py handoff ENDPOINT TABLE N POLL_MS release|death [--lease S]
                     [--samples FILE]
      release: this process holds a key; a waiter in another process calls
        acquire_lock(retry_period=POLL_MS); the holder releases after a
        random 200..700 ms. Measured: from the release_lock call to the
        waiter's return from acquire_lock.
      death: a holder process (lease S seconds, default 1, heartbeat every
        S/4) holds a key while this process waits in acquire_lock; it is
        killed (SIGKILL) after a random 200..700 ms. Measured: from the kill
        to acquire_lock's return. The library takes a lock over once its
        record version number stood still for the lease, so expect about S.
        S must be a whole number or a multiple of 0.25 (the library stores
        it as a Decimal made from a float and rejects e.g. 0.1 or 0.3).
      Prints "python_dynamodb_lock-MODE n=.. failed=.. p50_ms=.. p90_ms=..
      max_ms=..", the line bench_handoff prints.

Items: table with HASH lock_key (S) and RANGE sort_key (S), sort key "-",
the library's own attribute names (those of lockfs's table). Every wait is
bounded: acquire_lock gives up after 10 s (retry_timeout), a child that
does not answer within 30 s ends the run. Region us-east-1, credentials
from the environment. Exit status: 0, 1 if a sample failed, 2 on bad usage
or a missing library.
"""
import argparse
import datetime
import os
import random
import select
import signal
import subprocess
import sys
import threading
import time

try:
    import boto3
    from botocore.config import Config
    from python_dynamodb_lock.python_dynamodb_lock import (
        DynamoDBLockClient, DynamoDBLockError)
except ImportError as e:
    print("py_peer: %s (run through bench/cycle.sh or bench/handoff.sh "
          "--peers, which install it)" % e, file=sys.stderr)
    sys.exit(2)

NAME = "python_dynamodb_lock"
SORT = "-"
WAIT_MAX = datetime.timedelta(seconds=10)
CHILD_MAX_S = 30


def make_client(endpoint, table, threads=1, lease_s=None):
    ddb = boto3.resource(
        "dynamodb", endpoint_url=endpoint, region_name="us-east-1",
        config=Config(max_pool_connections=threads + 4,
                      retries={"max_attempts": 2},
                      connect_timeout=5, read_timeout=10))
    kw = {}
    if lease_s is not None:
        kw = {"lease_duration": datetime.timedelta(seconds=lease_s),
              "heartbeat_period": datetime.timedelta(seconds=lease_s / 4),
              "safe_period": datetime.timedelta(seconds=lease_s / 2)}
    # The names are the library's defaults, spelled out: lockfs's table.
    return DynamoDBLockClient(ddb, table_name=table,
                              partition_key_name="lock_key",
                              sort_key_name="sort_key",
                              ttl_attribute_name="expiry_time", **kw)


def pct_line(prefix, vals, n_fail):
    vals.sort()
    k = len(vals)
    return "%s n=%d failed=%d p50_ms=%.1f p90_ms=%.1f max_ms=%.1f" % (
        prefix, k, n_fail, vals[(k - 1) // 2], vals[(k * 9 - 1) // 10],
        vals[-1])


def cmd_cycle(a):
    client = make_client(a.endpoint, a.table, a.threads)
    lat = [[] for _ in range(a.threads)]
    fails = [0] * a.threads
    start = threading.Barrier(a.threads + 1, timeout=600)
    done = threading.Barrier(a.threads + 1, timeout=3600)

    def one(key):
        lock = client.acquire_lock(key, sort_key=SORT, retry_timeout=WAIT_MAX)
        client.release_lock(lock, best_effort=False)

    def worker(i):
        key = "bench-py-%d-%d" % (os.getpid(), i)
        for _ in range(a.warmup):
            try:
                one(key)
            except DynamoDBLockError:
                pass
        start.wait()
        out = lat[i]
        for _ in range(a.n):
            t0 = time.monotonic_ns()
            try:
                one(key)
            except DynamoDBLockError:
                fails[i] += 1
            out.append((time.monotonic_ns() - t0) // 1000)
        done.wait()

    ts = [threading.Thread(target=worker, args=(i,), daemon=True)
          for i in range(a.threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.monotonic()
    done.wait()
    total = time.monotonic() - t0
    client.close()
    allv = sorted(v for per in lat for v in per)
    k = len(allv)
    if a.samples:
        with open(a.samples, "a") as f:
            f.write("".join("%d\n" % v for v in allv))
    print("%s cycles=%d threads=%d failures=%d total_s=%.3f per_s=%.1f "
          "p50_us=%d p90_us=%d p99_us=%d" % (
              NAME, k, a.threads, sum(fails), total, k / total,
              allv[k // 2], allv[k * 9 // 10], allv[k * 99 // 100]))
    return 1 if sum(fails) else 0


class Child:
    """A helper process of this script, spoken to by lines."""

    def __init__(self, *args):
        self.p = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__)] + list(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            bufsize=1)

    def read(self):
        r, _, _ = select.select([self.p.stdout], [], [], CHILD_MAX_S)
        line = self.p.stdout.readline() if r else ""
        if not line:
            raise RuntimeError("helper process did not answer")
        return line.split()

    def send(self, s):
        self.p.stdin.write(s + "\n")

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def cmd_waiter(a):
    """Helper: for each KEY line, acquire it (polling every POLL_MS),
    print "got MONOTONIC_MS", release it."""
    client = make_client(a.endpoint, a.table)
    period = datetime.timedelta(milliseconds=a.poll_ms)
    print("ready", flush=True)
    for line in sys.stdin:
        key = line.strip()
        print("waiting", flush=True)
        try:
            lock = client.acquire_lock(key, sort_key=SORT,
                                       retry_period=period,
                                       retry_timeout=WAIT_MAX)
            t = time.monotonic() * 1e3
            client.release_lock(lock)
            print("got %.3f" % t, flush=True)
        except DynamoDBLockError as e:
            print("failed %s" % e.code, flush=True)
    client.close()
    return 0


def cmd_holder(a):
    """Helper: hold KEY (lease S), print "held", then wait to be killed."""
    client = make_client(a.endpoint, a.table, lease_s=a.lease)
    client.acquire_lock(a.key, sort_key=SORT, retry_timeout=WAIT_MAX)
    print("held", flush=True)
    time.sleep(CHILD_MAX_S * 4)
    return 1


def cmd_handoff(a):
    vals, failed = [], 0
    rnd = random.Random(os.getpid())
    if a.mode == "release":
        client = make_client(a.endpoint, a.table)
        waiter = Child("_waiter", a.endpoint, a.table, str(a.poll_ms))
        try:
            if waiter.read() != ["ready"]:
                raise RuntimeError("waiter did not start")
            for i in range(a.n):
                key = "handoff-py-%d-%d" % (os.getpid(), i)
                lock = client.acquire_lock(key, sort_key=SORT,
                                           retry_timeout=WAIT_MAX)
                waiter.send(key)
                waiter.read()  # "waiting": it is about to read the key
                time.sleep(0.2 + rnd.random() * 0.5)
                t0 = time.monotonic() * 1e3
                client.release_lock(lock, best_effort=False)
                got = waiter.read()
                if got[0] == "got":
                    vals.append(float(got[1]) - t0)
                else:
                    failed += 1
        finally:
            waiter.stop()
            client.close()
    else:
        client = make_client(a.endpoint, a.table)
        period = datetime.timedelta(milliseconds=a.poll_ms)
        for i in range(a.n):
            key = "handoff-py-death-%d-%d" % (os.getpid(), i)
            holder = Child("_holder", a.endpoint, a.table, key, str(a.lease))
            got = {}

            def wait(k=key):
                try:
                    lock = client.acquire_lock(
                        k, sort_key=SORT, retry_period=period,
                        retry_timeout=datetime.timedelta(
                            seconds=a.lease * 2 + 10))
                    got["t"] = time.monotonic() * 1e3
                    client.release_lock(lock)
                except DynamoDBLockError:
                    pass

            try:
                if holder.read() != ["held"]:
                    raise RuntimeError("holder did not take the lock")
                w = threading.Thread(target=wait, daemon=True)
                w.start()
                time.sleep(0.2 + rnd.random() * 0.5)
                t0 = time.monotonic() * 1e3
                holder.p.send_signal(signal.SIGKILL)
                holder.p.wait()
                w.join(a.lease * 2 + 15)
                if "t" in got:
                    vals.append(got["t"] - t0)
                else:
                    failed += 1
            finally:
                holder.stop()
        client.close()
    if not vals:
        print("py_peer: every handoff failed", file=sys.stderr)
        return 1
    if a.samples:
        with open(a.samples, "a") as f:
            f.write("".join("%.3f\n" % v for v in vals))
    print(pct_line("%s-%s" % (NAME, a.mode), vals, failed))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cycle")
    c.add_argument("endpoint")
    c.add_argument("table")
    c.add_argument("n", type=int)
    c.add_argument("threads", type=int)
    c.add_argument("--warmup", type=int, default=100)
    c.add_argument("--samples")
    h = sub.add_parser("handoff")
    h.add_argument("endpoint")
    h.add_argument("table")
    h.add_argument("n", type=int)
    h.add_argument("poll_ms", type=int)
    h.add_argument("mode", choices=["release", "death"])
    h.add_argument("--lease", type=float, default=1.0)
    h.add_argument("--samples")
    w = sub.add_parser("_waiter")
    w.add_argument("endpoint")
    w.add_argument("table")
    w.add_argument("poll_ms", type=int)
    o = sub.add_parser("_holder")
    o.add_argument("endpoint")
    o.add_argument("table")
    o.add_argument("key")
    o.add_argument("lease", type=float)
    a = ap.parse_args()
    if a.cmd == "cycle" and not (1 <= a.n <= 10**7 and 1 <= a.threads <= 256):
        ap.error("N in 1..10^7, THREADS in 1..256")
    if a.cmd == "handoff" and not (1 <= a.n <= 10**5 and 1 <= a.poll_ms):
        ap.error("N in 1..10^5, POLL_MS at least 1")
    return {"cycle": cmd_cycle, "handoff": cmd_handoff,
            "_waiter": cmd_waiter, "_holder": cmd_holder}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
