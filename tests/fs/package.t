#!/usr/bin/env bash
# fs-run: alone (builds the package and a Debian root: CPU and disk)
# package.t: the Debian package, as an operator installs it. Builds
# lockfs_VERSION_ARCH.deb with cpack, makes a clean Debian 12 root
# (mmdebstrap, minbase + man-db), installs the .deb there with apt (which
# must pull libfuse3-3, libcurl4, libcjson1, fuse3, ... from the mirror),
# checks where every file went and what its postinst and postrm do (only
# systemctl daemon-reload), runs the installed programs, and mounts
# from the root twice (mount -t lockfs through /sbin/mount.lockfs, and
# mount -t fuse.lockfs through fuse3's mount.fuse3) against the suite's
# DynamoDB Local: one lock taken on one mount, seen held and refused on the
# other, released, then taken with lockfs-run. Also checks that cmake
# --install puts the files where mount.lockfs(8) says.
#
# The base root is cached as a tarball in ~/.cache/lockfs/pkg-root
# (LOCKFS_PKG_CACHE); each run unpacks a fresh copy, so apt always starts
# from a clean root (delete the tarball to rebuild it). The whole file runs
# in a private mount namespace: /proc, /dev and the lockfs mounts made for
# the root vanish with it. Every step has a timeout.
#
# Environment: LOCKFS_PKG_BUILD (a configured release build directory to
# package; default: a fresh build under the work directory),
# LOCKFS_DEB_MIRROR (default http://deb.debian.org/debian; the security
# suite comes from LOCKFS_DEB_SECURITY, default
# http://deb.debian.org/debian-security).
#
# Skips only where the machine cannot make a clean root: not root, no
# mount namespace, no mmdebstrap (contrib/install-deps test installs it),
# no network to the mirror. With CI=true each of those fails instead.
_why_not=
if [ "$(id -u)" != 0 ]; then
	_why_not="not root: a clean root needs mmdebstrap, chroot and mounts"
elif [ -z "${LOCKFS_PKG_NS:-}" ]; then
	if command -v unshare >/dev/null 2>&1 &&
		unshare -m --propagation private true 2>/dev/null; then
		export LOCKFS_PKG_NS=1
		exec unshare -m --propagation private bash "$0" "$@"
	fi
	_why_not="no private mount namespace (unshare -m failed)"
fi
. "$(dirname "$0")/lib.sh"

# cannot REASON: the machine cannot make a clean root.
cannot() {
	if [ "${CI:-}" = true ]; then
		echo "Bail out! cannot make a clean Debian root: $* (CI=true: not skipped)"
		exit 1
	fi
	skip_all "cannot make a clean Debian root: $*"
}

[ -z "$_why_not" ] || cannot "$_why_not"
command -v mmdebstrap >/dev/null ||
	cannot "mmdebstrap is not installed (contrib/install-deps test installs it)"
command -v cpack >/dev/null && command -v dpkg-shlibdeps >/dev/null ||
	cannot "cpack or dpkg-shlibdeps is missing (contrib/install-deps build installs them)"

MIRROR=${LOCKFS_DEB_MIRROR:-http://deb.debian.org/debian}
SECURITY=${LOCKFS_DEB_SECURITY:-http://deb.debian.org/debian-security}
SUITE=bookworm
CACHE=${LOCKFS_PKG_CACHE:-${HOME:-/root}/.cache/lockfs/pkg-root}
BASE=$CACHE/$SUITE-minbase-man-db.tar
R=$WORK/root
E_R="endpoint=$ENDPOINT,region=us-east-1"

# mirror_up: the mirror answers (HTTP through curl when present, else TCP).
mirror_up() {
	if command -v curl >/dev/null; then
		timeout 20 curl -fsS -o /dev/null "$MIRROR/dists/$SUITE/Release"
	else
		local host=${MIRROR#*://} port=80
		host=${host%%/*}
		case $host in *:*) port=${host##*:}; host=${host%:*} ;; esac
		timeout 20 bash -c "exec 3<>/dev/tcp/$host/$port"
	fi
}
mirror_up 2>"$WORK/mirror.err" ||
	cannot "no network to the Debian mirror $MIRROR ($(head -c 200 "$WORK/mirror.err"))"

plan 42
t0=$SECONDS

# ---- cleanup: nothing of the root may outlive this file ------------------
# chroot_pids: processes whose root is $R (all started here).
chroot_pids() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$R" ] && echo "${p#/proc/}"
	done
}
# mounts_under DIR: mount points at or below DIR, deepest first.
mounts_under() {
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' \
		/proc/self/mountinfo | sort -r
}
pkg_cleanup() {
	local rc=$? m p
	for m in $(mounts_under "$R/mnt"); do
		timeout 10 umount -l "$m" 2>/dev/null
	done
	for p in $(chroot_pids); do
		kill -TERM "$p" 2>/dev/null
		wait_for 10 _gone "$p" || kill -9 "$p" 2>/dev/null
	done
	for m in $(mounts_under "$R"); do
		timeout 10 umount -l "$m" 2>/dev/null
	done
	# Never remove the root while anything is mounted in it (/dev!).
	if [ -d "$R" ] && [ -z "$(mounts_under "$R")" ] && [ -z "${LOCKFS_KEEP:-}" ]; then
		_unseal "$R"
		timeout 60 rm -rf --one-file-system "$R"
	fi
	(exit "$rc")
	_cleanup
}
trap pkg_cleanup EXIT

# in_root SECS CMD...: CMD in the root, at most SECS seconds, with a fixed
# PATH and fake AWS keys. --foreground: timeout must not put CMD in a
# process group of its own, or hold=pgrp would release a lock taken by CMD
# as soon as it exits.
in_root() {
	local secs=$1
	shift
	timeout --foreground "$secs" chroot "$R" /usr/bin/env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		AWS_ACCESS_KEY_ID=fake AWS_SECRET_ACCESS_KEY=fake \
		AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null \
		AWS_SHARED_CREDENTIALS_FILE=/dev/null "$@"
}

# ---- the package ----------------------------------------------------------
VERSION=$(sed -n 's/^project(lockfs VERSION \([0-9.]*\).*/\1/p' "$_root/CMakeLists.txt")
ARCH=$(dpkg --print-architecture)
B=${LOCKFS_PKG_BUILD:-$WORK/build}
if [ -z "${LOCKFS_PKG_BUILD:-}" ]; then
	# Only what the package holds: install must not wait for the tests.
	timeout 120 cmake -S "$_root" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >"$WORK/cmake.log" 2>&1 &&
		timeout 280 cmake --build "$B" -j "$(nproc)" --target lockfs lockfs-run \
			>>"$WORK/cmake.log" 2>&1
else
	timeout 280 cmake --build "$B" -j "$(nproc)" >"$WORK/cmake.log" 2>&1
fi
rc=$?
ok $rc "the release build of lockfs and lockfs-run ($B)" ||
	{ diag "$(tail -n 20 "$WORK/cmake.log")"; echo "Bail out! no build"; exit 1; }

DEB=$WORK/pkg/lockfs_${VERSION}_$ARCH.deb
timeout 120 cpack --config "$B/CPackConfig.cmake" -G DEB -B "$WORK/pkg" \
	>"$WORK/cpack.log" 2>&1
ok $? "cpack -G DEB makes $(basename "$DEB")" ||
	diag "$(tail -n 20 "$WORK/cpack.log")"
[ -f "$DEB" ] || { echo "Bail out! no package"; exit 1; }
deps=$(dpkg-deb -f "$DEB" Depends)
like "$deps" '(^|, )fuse3(,|$)' "Depends names fuse3 (mount.fuse3, fusermount3)"
like "$deps" 'libfuse3-3 \(>= [0-9.]+\)' "Depends names libfuse3-3 (from dpkg-shlibdeps)"
like "$deps" 'libcurl4 \(>= ' "Depends names libcurl4"
like "$deps" 'libcjson1 \(>= ' "Depends names libcjson1"
like "$deps" 'libssl3 \(>= ' "Depends names libssl3"

# ---- the clean root -------------------------------------------------------
mkdir -p "$CACHE"
if [ ! -s "$BASE" ]; then
	tb=$SECONDS
	(
		# One builder at a time; the tarball appears whole or not at all.
		flock -w 300 9 || exit 1
		[ -s "$BASE" ] && exit 0
		# mmdebstrap picks the output format by the name: *.tar.
		tmp=$CACHE/.building-$$.tar
		timeout 280 mmdebstrap --variant=minbase --include=man-db "$SUITE" \
			"$tmp" \
			"deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" \
			"deb $SECURITY $SUITE-security main" >"$WORK/mmdebstrap.log" 2>&1 &&
			[ -f "$tmp" ] && mv "$tmp" "$BASE"
		rc=$?
		rm -rf "$tmp"
		exit $rc
	) 9>"$CACHE/.lock"
	ok $? "mmdebstrap made the base root of Debian 12 ($((SECONDS - tb)) s, cached in $BASE)" ||
		{ diag "$(tail -n 20 "$WORK/mmdebstrap.log")"; echo "Bail out! no base root"; exit 1; }
else
	pass "the base root of Debian 12 is cached ($BASE)"
fi
mkdir -p "$R"
timeout 120 tar -C "$R" -xf "$BASE" && [ -x "$R/usr/bin/apt-get" ]
ok $? "a fresh root unpacked from it" || { echo "Bail out! no root"; exit 1; }
# The host's resolver and mirror of today, not those of the cached base.
cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null
printf 'deb %s %s main\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE-updates" \
	"$SECURITY" "$SUITE-security" >"$R/etc/apt/sources.list"
mount -t proc proc "$R/proc" && mount --rbind /dev "$R/dev"
ok $? "/proc and /dev (with /dev/fuse) in the root" || { echo "Bail out! no mounts"; exit 1; }

missing=
for p in lockfs libfuse3-3 libcurl4 libcjson1 fuse3; do
	in_root 10 dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+="$p "
done
is "$missing" "lockfs libfuse3-3 libcurl4 libcjson1 fuse3 " \
	"the clean root has none of lockfs and its dependencies"

# ---- apt install ./lockfs_VERSION_ARCH.deb -------------------------------
cp "$DEB" "$R/tmp/"
in_root 120 apt-get update >"$WORK/apt-update.log" 2>&1
ok $? "apt-get update in the root" || diag "$(tail -n 10 "$WORK/apt-update.log")"
in_root 240 apt-get install -y "/tmp/$(basename "$DEB")" \
	>"$WORK/apt-install.log" 2>&1
ok $? "apt-get install ./$(basename "$DEB") pulls its dependencies and installs it" ||
	diag "$(tail -n 20 "$WORK/apt-install.log")"
missing=
for p in lockfs libfuse3-3 libcurl4 libcjson1 fuse3 ca-certificates; do
	in_root 10 dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+="$p "
done
is "$missing" "" "lockfs, libfuse3-3, libcurl4, libcjson1, fuse3 and ca-certificates are installed"

# ---- maintainer scripts ------------------------------------------------------
ctrl=$(dpkg-deb --ctrl-tarfile "$DEB" | tar -tv 2>&1)
is "$(sed -En 's|^-rwxr-xr-x .* \./(postinst\|postrm)$|\1|p' <<<"$ctrl" | tr '\n' ' ')" \
	"postinst postrm " "the package has an executable postinst and postrm"
# Where systemd runs (/run/systemd/system), each asks it to reread its
# units, and nothing else: no instance is stopped or restarted.
mkdir -p "$R/run/systemd/system" "$R/usr/local/sbin"
printf '#!/bin/sh\necho "$*" >>/tmp/systemctl.calls\n' >"$R/usr/local/sbin/systemctl"
chmod 0755 "$R/usr/local/sbin/systemctl"
in_root 10 /var/lib/dpkg/info/lockfs.postinst configure 0.0.1 &&
	in_root 10 /var/lib/dpkg/info/lockfs.postrm upgrade 0.0.1
rc=$?
is "$rc $(tr '\n' ';' <"$R/tmp/systemctl.calls" 2>/dev/null)" \
	"0 --system daemon-reload;--system daemon-reload;" \
	"postinst configure and postrm each run systemctl daemon-reload where systemd runs, and nothing else"
rm -rf "$R/run/systemd/system" "$R/usr/local/sbin/systemctl" "$R/tmp/systemctl.calls"

# ---- where the files are ----------------------------------------------------
want="/usr/bin/lockfs /usr/bin/lockfs-run /sbin/mount.lockfs
/usr/share/man/man8/lockfs.8 /usr/share/man/man8/mount.lockfs.8
/usr/share/man/man1/lockfs-run.1 /lib/systemd/system/lockfs@.service
/usr/share/doc/lockfs/examples/lockfs.conf.example
/usr/share/doc/lockfs/examples/mnt-locks.mount /usr/share/doc/lockfs/copyright"
listed=$(in_root 10 dpkg -L lockfs 2>&1)
bad=
for f in $want; do
	grep -qx "$f" <<<"$listed" && [ -f "$R$f" ] || bad+="$f "
done
is "$bad" "" "dpkg -L lockfs lists every file where Debian puts it, and each is there"
bad=
for f in /usr/bin/lockfs /usr/bin/lockfs-run /sbin/mount.lockfs; do
	[ -x "$R$f" ] || bad+="$f "
done
is "$bad" "" "lockfs, lockfs-run and mount.lockfs are executable"
is "$(in_root 10 readlink -f /sbin/mount.lockfs)" /usr/sbin/mount.lockfs \
	"/sbin/mount.lockfs, where mount(8) looks, is /usr/sbin/mount.lockfs (merged /usr)"
unlike "$(in_root 10 ldd /usr/bin/lockfs /usr/bin/lockfs-run 2>&1)" 'not found' \
	"every shared library of lockfs and lockfs-run is installed"
is "$(in_root 10 man -w lockfs mount.lockfs lockfs-run 2>&1 | tr '\n' ' ')" \
	"/usr/share/man/man8/lockfs.8 /usr/share/man/man8/mount.lockfs.8 /usr/share/man/man1/lockfs-run.1 " \
	"man -w finds lockfs(8), mount.lockfs(8) and lockfs-run(1)"

out=$(in_root 10 lockfs --help 2>&1)
rc=$?
ok $((rc != 0)) "lockfs --help exits 0" ; like "$out" '^usage: lockfs ' "lockfs --help prints the usage"
out=$(in_root 10 lockfs-run --help 2>&1)
rc=$?
ok $((rc != 0)) "lockfs-run --help exits 0"; like "$out" 'Usage: lockfs-run ' "lockfs-run --help prints the usage"
like "$(in_root 10 lockfs --version 2>&1)" "$VERSION" "lockfs --version says $VERSION"

# ---- mounting from the root -------------------------------------------------
TABLE=pkg-$$-$RANDOM
in_root 60 lockfs --create-table -o "$E_R,table=$TABLE" \
	>"$WORK/create.log" 2>&1
ok $? "the installed lockfs creates a table on DynamoDB Local ($ENDPOINT)" ||
	diag "$(cat "$WORK/create.log")"

mkdir -p "$R/mnt/a" "$R/mnt/b"
# in_root mount: mount(8) of the root, which looks in the root's /sbin.
in_root 30 mount -t lockfs "lockfs:$TABLE" /mnt/a -o "$E_R" \
	>"$WORK/mount-a.log" 2>&1
ok $? "mount -t lockfs (mount(8) -> /sbin/mount.lockfs -> /usr/bin/lockfs)" ||
	diag "$(cat "$WORK/mount-a.log")"
in_root 30 mount -t fuse.lockfs "lockfs:$TABLE" /mnt/b -o "$E_R" \
	>"$WORK/mount-b.log" 2>&1
ok $? "mount -t fuse.lockfs (mount(8) -> mount.fuse3 of fuse3 -> lockfs)" ||
	diag "$(cat "$WORK/mount-b.log")"
is "$(findmnt -n -o FSTYPE,SOURCE -M "$R/mnt/a" | tr -s ' ')  $(findmnt -n -o FSTYPE,SOURCE -M "$R/mnt/b" | tr -s ' ')" \
	"fuse.lockfs lockfs:$TABLE  fuse.lockfs lockfs:$TABLE" "both are lockfs mounts of the table"

# One acquire and release, through the mounts. hold=pgrp: the lock taken by
# the shell in the root is held by this file's process group until rm.
in_root 20 sh -c 'set -C; : > /mnt/a/deploy'
ok $? "acquire on /mnt/a (set -C; : > /mnt/a/deploy)"
out=$(in_root 20 cat /mnt/b/deploy 2>&1)
like "$out" $'(^|\n)state: held(\n|$)' "the other mount reads it: state: held"
in_root 20 sh -c 'set -C; : > /mnt/b/deploy' 2>/dev/null
ok $(($? == 0)) "the other mount cannot take it (O_EXCL fails)"
in_root 20 lockfs-run -n /mnt/b/deploy -- true 2>/dev/null
is "$?" 75 "lockfs-run -n on the other mount: 75 (busy)"
in_root 20 rm /mnt/a/deploy
ok $? "release (rm /mnt/a/deploy)"
out=$(in_root 30 lockfs-run -n /mnt/b/deploy -- sh -c 'echo "fence=$LOCKFS_FENCE"' 2>&1)
like "$out" '^fence=[0-9]+$' "then lockfs-run -n on the other mount runs the command with a fencing token"

# ---- unmount ------------------------------------------------------------------
in_root 20 umount /mnt/a && in_root 20 umount /mnt/b
ok $? "umount of both mounts"
no_mount() { [ -z "$(mounts_under "$R/mnt")" ]; }
wait_for 15 no_mount
ok $? "no lockfs mount is left in the root"
no_daemon() { [ -z "$(chroot_pids)" ]; }
wait_for 15 no_daemon
ok $? "both daemons exit after umount"

# ---- cmake --install agrees with mount.lockfs(8) ----------------------------------
timeout 60 env DESTDIR="$WORK/inst" cmake --install "$B" >"$WORK/install.log" 2>&1
ok $? "cmake --install (default prefix /usr/local) into a DESTDIR" ||
	diag "$(tail -n 10 "$WORK/install.log")"
bad=
for f in /usr/local/bin/lockfs /usr/local/bin/lockfs-run /sbin/mount.lockfs \
	/usr/local/share/man/man8/mount.lockfs.8 \
	/usr/local/lib/systemd/system/lockfs@.service \
	/usr/local/share/doc/lockfs/examples/lockfs.conf.example; do
	[ -f "$WORK/inst$f" ] || bad+="$f "
done
is "$bad" "" "cmake --install: lockfs in /usr/local/bin, mount.lockfs in /sbin, units in /usr/local/lib/systemd/system"
man8=$(cat "$_root/contrib/man/mount.lockfs.8")
ok $([[ $man8 == *'.I /sbin/mount.lockfs'* && $man8 != *'/usr/local/sbin/mount.lockfs'* ]]; echo $?) \
	"mount.lockfs(8) names /sbin/mount.lockfs, as both installs do"
diag "package.t took $((SECONDS - t0)) s"
