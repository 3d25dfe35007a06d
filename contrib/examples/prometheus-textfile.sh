#!/bin/sh
# prometheus-textfile.sh: expose lockfs's metrics through node_exporter's
# textfile collector. MNT/.lockfs/metrics is already Prometheus text; copy
# it into the collector's directory with an atomic rename (node_exporter
# must never read a half-written file).
#
#   # /etc/cron.d/lockfs-metrics: every minute (or a systemd timer)
#   * * * * *  root  /usr/local/sbin/prometheus-textfile.sh /mnt/locks
#
# The one-liner for a single mount:
#   cp /mnt/locks/.lockfs/metrics /var/lib/prometheus/node-exporter/lockfs.prom.tmp &&
#     mv /var/lib/prometheus/node-exporter/lockfs.prom.tmp /var/lib/prometheus/node-exporter/lockfs.prom
#
# This script handles several mounts: every series gets a mount="MNT"
# label, so that the files do not collide (node_exporter refuses the same
# series twice). A mount that does not answer keeps its old file; the
# collector's node_textfile_mtime_seconds shows that it is stale.
# Alerts worth having: increase(lockfs_lost_total[10m]) > 0,
# rate(lockfs_heartbeats_failed_total[5m]) > 0,
# time() - node_textfile_mtime_seconds{file=~"lockfs.*"} > 300.
#
#   prometheus-textfile.sh [MOUNTPOINT...]     (default /mnt/locks)
#   TEXTFILE_DIR=...                           (default /var/lib/prometheus/node-exporter)
set -u
DIR=${TEXTFILE_DIR:-/var/lib/prometheus/node-exporter}
[ $# -gt 0 ] || set -- /mnt/locks
status=0

for mnt in "$@"; do
	name=$(printf '%s' "$mnt" | tr -c 'A-Za-z0-9' '_')
	tmp=$DIR/lockfs$name.prom.$$
	if awk -v m="$mnt" '
		BEGIN { gsub(/\\/, "\\\\", m); gsub(/"/, "\\\"", m); l = "mount=\"" m "\"" }
		/^#/ || !NF { print; next }
		{
			b = index($0, "{"); s = index($0, " ")
			if (b && b < s) print substr($0, 1, b) l "," substr($0, b + 1)
			else print substr($0, 1, s - 1) "{" l "}" substr($0, s)
		}' "$mnt/.lockfs/metrics" >"$tmp"; then
		mv "$tmp" "$DIR/lockfs$name.prom"
	else
		rm -f "$tmp"
		echo "prometheus-textfile: cannot read $mnt/.lockfs/metrics" >&2
		status=1
	fi
done
exit "$status"
