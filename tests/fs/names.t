#!/usr/bin/env bash
# names.t: names and limits (doc/semantics.md "Keys, names and
# directories"): 255 vs 256-byte
# names from lookup, create and mkdir; whole keys of 1024 vs 1025 bytes
# through nested directories; invalid UTF-8 (EINVAL); reserved ".lockfs*"
# names (EPERM); the control files .lockfs/status and .lockfs/metrics and
# their fields; statfs (namemax 255, FUSE magic, fuse.lockfs in mountinfo)
# and df.
. "$(dirname "$0")/lib.sh"

plan 66

new_table || { echo "Bail out! cannot create a table"; exit 1; }
OWNER=names-owner-$$
mount_start a "owner=$OWNER" || { echo "Bail out! cannot mount"; exit 1; }
M=$(mnt a)

# ---- name length: 255 is the limit, from create, lookup and mkdir --------
expect 0 open "$M/\\{255}a" O_CREAT,O_EXCL,O_RDONLY 0644
like "$("$T" stat "$M/\\{255}a")" '^ino=[0-9]+ mode=0100644 ' "a 255-byte lock is a regular file"
expect ENAMETOOLONG open "$M/\\{256}a" O_CREAT,O_EXCL,O_RDONLY 0644
expect ENAMETOOLONG open "$M/\\{256}a" O_CREAT,O_RDONLY 0644
expect ENAMETOOLONG stat "$M/\\{256}b"
expect ENAMETOOLONG stat "$M/\\{300}b"
expect ENAMETOOLONG mkdir "$M/\\{256}c" 0755
expect 0 mkdir "$M/\\{255}c" 0755
expect ENAMETOOLONG unlink "$M/\\{256}a"
# 127 two-byte characters and one byte: 255 bytes of valid UTF-8
E127=$(printf 'é%.0s' {1..127})
expect 0 open "$M/${E127}1" O_CREAT,O_EXCL,O_RDONLY 0644
expect ENAMETOOLONG open "$M/${E127}é" O_CREAT,O_EXCL,O_RDONLY 0644

# listed with their full names
listing=$("$T" readdir "$M")
is "$(awk 'length($0) == 255 && /^a+$/' <<<"$listing" | wc -l)" 1 \
	"readdir lists the 255-byte lock once"
is "$(awk 'length($0) == 255 && /^c+$/' <<<"$listing" | wc -l)" 1 \
	"readdir lists the 255-byte directory once"

# ---- the whole key: at most 1024 bytes ---------------------------------
# Five directories of 200 bytes: "d...d/d...d/d...d/d...d/d...d" is 1004
# bytes; a 19-byte name makes a 1024-byte key, a 20-byte one 1025.
d=$M
for i in 1 2 3 4 5; do
	d="$d/\\{200}$i"
	expect 0 mkdir "$d" 0755
done
expect 0 open "$d/\\{19}k" O_CREAT,O_EXCL,O_RDONLY 0644
like "$("$T" read "$d/\\{19}k" | sed -n 's/^key: //p' | awk '{print length($0)}')" '^1024$' \
	"the lock text shows the whole 1024-byte key"
expect ENAMETOOLONG open "$d/\\{20}k" O_CREAT,O_EXCL,O_RDONLY 0644
expect ENAMETOOLONG stat "$d/\\{20}k"
expect ENAMETOOLONG mkdir "$d/\\{20}e" 0755
expect 0 unlink "$d/\\{19}k"

# ---- UTF-8 -------------------------------------------------------------
expect EINVAL open "$M/\\xff" O_CREAT,O_EXCL,O_RDONLY 0644
expect EINVAL open "$M/ok\\xc3" O_CREAT,O_RDONLY 0644
expect EINVAL stat "$M/\\xc0\\xaf"
expect EINVAL mkdir "$M/\\xed\\xa0\\x80" 0755
expect EINVAL open "$M/\\xf8\\x88\\x80\\x80\\x80" O_CREAT,O_EXCL,O_RDONLY 0644
expect 0 open "$M/ünïcødé-✓" O_CREAT,O_EXCL,O_RDONLY 0644
is "$("$T" read "$M/ünïcødé-✓" | sed -n 's/^key: //p')" "ünïcødé-✓" \
	"a UTF-8 name is its key"

# ---- reserved names ----------------------------------------------------
expect EPERM open "$M/.lockfsx" O_CREAT,O_EXCL,O_RDONLY 0644
expect EPERM open "$M/.lockfs.tmp" O_CREAT,O_RDONLY 0644
expect EPERM mkdir "$M/.lockfs-dir" 0755
expect EPERM open "$M/\\{255}c/.lockfs" O_CREAT,O_EXCL,O_RDONLY 0644
expect EEXIST mkdir "$M/.lockfs" 0755
expect EPERM rmdir "$M/.lockfs"
expect EPERM unlink "$M/.lockfs/status"
expect EPERM open "$M/.lockfs/new" O_CREAT,O_EXCL,O_RDONLY 0644
expect EACCES open "$M/.lockfs/status" O_WRONLY
expect ENOENT stat "$M/.lockfs/nothing"
expect 0 open "$M/.lockf" O_CREAT,O_EXCL,O_RDONLY 0644

# ---- .lockfs/status ------------------------------------------------------
status=$("$T" read "$M/.lockfs/status")
is "$(field "$status" owner)" "$OWNER" "status: owner"
is "$(field "$status" table)" "$TABLE" "status: table"
is "$(field "$status" endpoint)" "$ENDPOINT" "status: endpoint"
is "$(field "$status" region)" "us-east-1" "status: region"
is "$(field "$status" hold)" "pgrp" "status: hold (default pgrp)"
is "$(field "$status" lease)/$(field "$status" heartbeat)/$(field "$status" safe_period)" \
	"30.000/5.000/20.000" "status: lease/heartbeat/safe_period defaults"
# held now: 255 a's, 127 é + 1, ünïcødé-✓, .lockf
is "$(field "$status" locks_held)" 4 "status: locks_held counts our locks"
is "$(grep -c '^lock: key=' <<<"$status")" 4 "status: one lock: line per lock"
# cat, status, cat: a heartbeat between them changes the version, so the
# status line must show the version of one of the two reads.
v1=$(field "$("$T" read "$M/ünïcødé-✓")" version)
line=$(grep '^lock: key=ünïcødé-✓ ' <"$M/.lockfs/status")
v2=$(field "$("$T" read "$M/ünïcødé-✓")" version)
like "$line" "^lock: key=ünïcødé-✓ state=held version=($v1|$v2) pid=[0-9]+ pgid=[0-9]+ uid=0 cmd=lockfs-t acquired=" \
	"status: the lock line has key, state, version (as cat), holder"
is "$(stat -c %a "$M/.lockfs/status")" 444 "status is read-only (0444)"

# ---- .lockfs/metrics -----------------------------------------------------
metrics=$("$T" read "$M/.lockfs/metrics")
# acquired: 255 a's, 255 é, 1024-byte key, ünïcødé, .lockf
is "$(sed -n 's/^lockfs_acquires_total //p' <<<"$metrics")" 5 \
	"metrics: lockfs_acquires_total counts acquires"
is "$(sed -n 's/^lockfs_releases_total //p' <<<"$metrics")" 1 \
	"metrics: lockfs_releases_total counts the unlink"
puts=$(sed -n 's/^lockfs_dynamodb_requests_total{operation="PutItem"} //p' <<<"$metrics")
like "$puts" '^[0-9]+$' 'metrics: lockfs_dynamodb_requests_total{operation="PutItem"} is there'
ok "$([ "${puts:-0}" -ge 5 ] && echo 0 || echo 1)" "metrics: at least one PutItem per acquire ($puts)"
like "$(grep '^# TYPE lockfs_acquires_total' <<<"$metrics")" '^# TYPE lockfs_acquires_total counter$' \
	"metrics: Prometheus TYPE lines"
expect 0 open "$M/.lockfs/metrics" O_RDONLY

# ---- statfs and df ---------------------------------------------------------
is "$("$T" statfs "$M")" "namemax=255 type=0x65735546" "statfs: namemax 255, FUSE magic"
is "$(stat -f -c %l "$M")" 255 "stat -f: maximum name length 255"
is "$(getconf NAME_MAX "$M")" 255 "pathconf NAME_MAX is 255"
is "$(awk -v m="$M" '$5 == m { for (i = 7; i <= NF; i++) if ($i == "-") { print $(i + 1), $(i + 2); exit } }' /proc/self/mountinfo)" \
	"fuse.lockfs lockfs:$TABLE" "mountinfo: type fuse.lockfs, source lockfs:TABLE"
dfout=$(timeout 10 df -P "$M" 2>&1)
ok $? "df works on the mount"
like "$(tail -n 1 <<<"$dfout")" "^lockfs:$TABLE .* $M\$" "df shows the source and the mountpoint"
is "$(timeout 10 df -T "$M" | awk 'NR == 2 { print $2 }')" fuse.lockfs "df -T says fuse.lockfs"

mount_stop a
