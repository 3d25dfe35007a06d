#!/usr/bin/python3
"""plot: PNG plots of the samples bench/cycle.sh, bench/handoff.sh and
bench/scale.sh leave in their output directory. matplotlib from Debian
(python3-matplotlib: contrib/install-deps bench); exit status 3 without it.

  plot.py cycle DIR     DIR/cycle-*.us (one cycle's time in us per line)
                        -> DIR/cycle-latency.png: the distribution (CDF) of
                        a cycle's time for each, log time axis
  plot.py handoff DIR   DIR/handoff-*.ms (one handoff in ms per line)
                        -> DIR/handoff.png: the same for handoffs
  plot.py scale DIR SAMPLES LOCKS PERIOD_S PRICE
                        SAMPLES: bench_scale --samples output
                        -> DIR/scale-heartbeats.png: renewals in each second
                        of the hold against LOCKS / PERIOD_S (the rate
                        needed); DIR/scale-cost.png: on-demand cost a month
                        of one write per held lock per PERIOD_S against the
                        locks held (PRICE USD per million write request
                        units, 730 h a month), with the writes measured in
                        the hold marked
The label of each curve is the file name between the prefix and the suffix,
in the order DIR/cycle.order or DIR/handoff.order lists them if it exists.
"""
import glob
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("plot: matplotlib is missing (contrib/install-deps bench); no plots",
          file=sys.stderr)
    sys.exit(3)

HOURS_PER_MONTH = 730.0


def series(d, prefix, suffix):
    files = sorted(glob.glob(os.path.join(d, prefix + "*" + suffix)))
    names = [os.path.basename(f)[len(prefix):-len(suffix)] for f in files]
    order_file = os.path.join(d, prefix.rstrip("-") + ".order")
    if os.path.exists(order_file):
        with open(order_file) as f:
            order = [l.strip() for l in f if l.strip()]
        names.sort(key=lambda n: order.index(n) if n in order else len(order))
    out = []
    for n in names:
        with open(os.path.join(d, prefix + n + suffix)) as f:
            v = sorted(float(x) for x in f if x.strip())
        if v:
            out.append((n, v))
    return out


LABELS = {
    "direct": "direct floor: PutItem + DeleteItem",
    "lockfs": "lockfs, same key",
    "lockfs-fresh": "lockfs, fresh keys",
    "lockfs-dirs": "lockfs, one directory per thread",
    "dynamodb-lock-client": "dynamodb-lock-client (FailClosed)",
    "lockfs-death-same": "lockfs, holder killed, same mount",
    "lockfs-death-other": "lockfs, holder killed, other mount",
}


def label(name):
    if name in LABELS:
        return LABELS[name]
    for pre, what in (("lockfs-flock-", "lockfs flock waiter, wait_poll %s s"),
                      ("python_dynamodb_lock-death-lease",
                       "python_dynamodb_lock, holder killed, lease %s s"),
                      ("python_dynamodb_lock-",
                       "python_dynamodb_lock released, poll %s s"),
                      ("dynamodb-lock-client-",
                       "dynamodb-lock-client released, poll %s s")):
        if name.startswith(pre):
            return what % name[len(pre):]
    return name


def style(name):
    """Solid lines for lockfs and the floor, dashed and dotted for peers."""
    if name.startswith("dynamodb-lock-client"):
        return "--"
    if name.startswith("python_dynamodb_lock"):
        return ":"
    return "-"


def color_index(name, i):
    """Handoffs: one colour per poll period (lockfs and peers alike) and per
    kind of death; the cycle plot: one per curve."""
    for j, end in enumerate(("-0.25", "-0.1", "-1", "death-same",
                             "death-other", "death-lease1")):
        if name.endswith(end):
            return j
    return i


def cdf(ax, name, v, scale, unit, color):
    k = len(v)
    ax.step([x * scale for x in v], [(i + 1) / k for i in range(k)],
            where="post", linestyle=style(name), color=color,
            label="%s (n=%d, p50 %.3g %s)" % (label(name), k,
                                              v[(k - 1) // 2] * scale, unit))


def plot_cdf(d, prefix, suffix, scale, xlabel, title, out):
    s = series(d, prefix, suffix)
    if not s:
        print("plot: no %s*%s in %s" % (prefix, suffix, d), file=sys.stderr)
        return 1
    fig, ax = plt.subplots(figsize=(12, 5.5))
    colors = plt.get_cmap("tab10").colors
    for i, (name, v) in enumerate(s):
        cdf(ax, name, v, scale, "ms", colors[color_index(name, i) % 10])
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction at or below")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    path = os.path.join(d, out)
    fig.savefig(path, dpi=100)
    print(path)
    return 0


def parse_samples(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            r = {"phase": parts[0]}
            for kv in parts[1:]:
                k, _, v = kv.partition("=")
                r[k] = float(v)
            rows.append(r)
    return rows


def plot_scale(d, samples, locks, period, price):
    rows = [r for r in parse_samples(samples)
            if r["phase"] == "hold" and r.get("metrics_ok", 1)]
    if not rows:
        print("plot: no hold samples in %s" % samples, file=sys.stderr)
        return 1
    t0 = rows[0]["t_us"]
    ts = [(r["t_us"] - t0) / 1e6 for r in rows]
    rate = [r["renewals_per_s"] for r in rows]
    need = locks / period
    mean = sum(rate) / len(rate)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.bar(ts, rate, width=0.8, label="renewals in the second")
    ax.axhline(need, color="k", linestyle="--",
               label="needed: %d locks / %g s = %.0f/s" % (locks, period, need))
    ax.axhline(mean, color="tab:orange", linestyle=":",
               label="mean %.0f/s (%.2fx needed); busiest %.2fx the mean"
               % (mean, mean / need, max(rate) / mean if mean else 0))
    ax.set_xlabel("second of the hold")
    ax.set_ylabel("renewals per second")
    ax.set_title("lockfs: heartbeat spread, %d locks held on one mount" % locks)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = os.path.join(d, "scale-heartbeats.png")
    fig.savefig(path, dpi=100)
    print(path)

    writes = [r["put"] + r["update"] + r["delete"] for r in rows]
    secs = sum(r["dt_s"] for r in rows)
    wps = sum(writes) / secs if secs else 0
    month = lambda w: w * 3600 * HOURS_PER_MONTH / 1e6 * price
    xs = [10 ** (e / 4) for e in range(0, 4 * 7 + 1)]  # 1 .. 10^7 locks
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(xs, [month(x / period) for x in xs],
            label="one write per held lock per %g s (lockfs, "
            "python_dynamodb_lock defaults)" % period)
    ax.plot([locks], [month(wps)], "o",
            label="measured: %.0f writes/s holding %d locks = $%.0f a month"
            % (wps, locks, month(wps)))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("locks held (all hosts)")
    ax.set_ylabel("USD a month, on demand")
    ax.set_title("cost of per-lock heartbeats at $%g per million writes, "
                 "%.0f h a month" % (price, HOURS_PER_MONTH))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path = os.path.join(d, "scale-cost.png")
    fig.savefig(path, dpi=100)
    print(path)
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "cycle":
        return plot_cdf(argv[1], "cycle-", ".us", 1e-3,
                        "time per lock cycle (acquire + release), ms",
                        "lock cycle: lockfs, the direct floor and peers",
                        "cycle-latency.png")
    if len(argv) >= 2 and argv[0] == "handoff":
        return plot_cdf(argv[1], "handoff-", ".ms", 1.0,
                        "handoff: release or death to the next holder, ms",
                        "handoff: lockfs and peers", "handoff.png")
    if len(argv) == 6 and argv[0] == "scale":
        return plot_scale(argv[1], argv[2], int(argv[3]), float(argv[4]),
                          float(argv[5]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
