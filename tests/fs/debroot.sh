# debroot.sh: a clean Debian 12 root for the tests that need a fresh machine
# (tests/fs/package.t, tests/fs/fresh.t). Sourced first, in place of
# lib.sh: it re-execs the test in a private mount namespace (before lib.sh
# is sourced, so that lib.sh's work directory and DynamoDB Local belong to
# the re-executed process), then sources lib.sh, checks that this machine
# can make a clean root (root, the namespace, mmdebstrap, the Debian
# mirror) and sets the EXIT trap that removes everything of the root.
# /proc, /dev and any mount made for the root vanish with the namespace;
# the trap still unmounts them and kills every process whose root is the
# root (the namespace lives as long as one of them does), then removes it.
#
# cannot_run TEXT  the test cannot run here: skip_all TEXT, or with
#                  CI=true "Bail out!" (a test that cannot run fails in CI)
# cannot REASON    cannot_run "cannot make a clean Debian root: REASON"
# net_up URL       the URL answers (curl when present, else a TCP connect)
# debroot_make     a fresh root at $R, unpacked from the base (mmdebstrap
#                  minbase + man-db, cached as a tarball; made first when
#                  missing), with the host's resolv.conf and the mirror in
#                  its sources.list: two checks; bails out without a root
# debroot_mount    /proc and /dev (rbind: /dev/fuse) in the root
# in_root SECS CMD...  CMD in the root (chroot) with a fixed PATH
#                  ($ROOT_PATH), HOME=/root and fake AWS keys, at most SECS
# not_installed PKG...  those of the packages not installed in the root,
#                  each followed by a space
# chroot_pids      processes whose root is $R
# mounts_under DIR mount points at or below DIR, deepest first
# no_mount, no_process   nothing is mounted under the root's /mnt; no
#                  process runs in the root (for wait_for)
#
# The base is cached in ~/.cache/lockfs/pkg-root (LOCKFS_PKG_CACHE); each
# run unpacks a fresh copy, so every test starts from a clean root (delete
# the tarball to rebuild it). Environment: LOCKFS_DEB_MIRROR (default
# http://deb.debian.org/debian; the security suite comes from
# LOCKFS_DEB_SECURITY, default http://deb.debian.org/debian-security),
# LOCKFS_KEEP (keeps the root).
# shellcheck shell=bash source-path=SCRIPTDIR
_why_not=
if [ "$(id -u)" != 0 ]; then
	_why_not="not root: a clean root needs mmdebstrap, chroot and mounts"
elif [ -z "${LOCKFS_DEBROOT_NS:-}" ]; then
	if command -v unshare >/dev/null 2>&1 &&
		unshare -m --propagation private true 2>/dev/null; then
		export LOCKFS_DEBROOT_NS=1
		exec unshare -m --propagation private bash "$0" "$@"
	fi
	_why_not="no private mount namespace (unshare -m failed)"
fi
# The namespace began with a copy of every mount of the host. A copy of a
# FUSE mount holds its connection open, so a daemon whose mount is
# unmounted outside meanwhile (another test's, an operator's) would not
# exit before this file ends: the copies are detached here, in the
# namespace only.
if [ -n "${LOCKFS_DEBROOT_NS:-}" ] && [ -z "$_why_not" ]; then
	while read -r _m _t; do
		case $_t in
		fuse | fuse.* | fuseblk) umount -l "$(printf '%b' "$_m")" 2>/dev/null ;;
		esac
	done < <(findmnt -rn -o TARGET,FSTYPE)
fi
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cannot_run() {
	if [ "${CI:-}" = true ]; then
		echo "Bail out! $* (CI=true: not skipped)"
		exit 1
	fi
	skip_all "$*"
}
cannot() { cannot_run "cannot make a clean Debian root: $*"; }

MIRROR=${LOCKFS_DEB_MIRROR:-http://deb.debian.org/debian}
SECURITY=${LOCKFS_DEB_SECURITY:-http://deb.debian.org/debian-security}
SUITE=bookworm
CACHE=${LOCKFS_PKG_CACHE:-${HOME:-/root}/.cache/lockfs/pkg-root}
BASE=$CACHE/$SUITE-minbase-man-db.tar
R=$WORK/root
ROOT_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

net_up() {
	local url=$1 host port=80
	if command -v curl >/dev/null; then
		timeout 20 curl -fsS -o /dev/null "$url"
		return
	fi
	[[ $url == https://* ]] && port=443
	host=${url#*://}
	host=${host%%/*}
	case $host in *:*) port=${host##*:}; host=${host%:*} ;; esac
	timeout 20 bash -c "exec 3<>/dev/tcp/$host/$port"
}

[ -z "$_why_not" ] || cannot "$_why_not"
command -v mmdebstrap >/dev/null ||
	cannot "mmdebstrap is not installed (contrib/install-deps test installs it)"
net_up "$MIRROR/dists/$SUITE/Release" 2>"$WORK/mirror.err" ||
	cannot "no network to the Debian mirror $MIRROR ($(head -c 200 "$WORK/mirror.err"))"

# ---- cleanup: nothing of the root may outlive the test -------------------
chroot_pids() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$R" ] && echo "${p#/proc/}"
	done
}
mounts_under() {
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' \
		/proc/self/mountinfo | sort -r
}
no_mount() { [ -z "$(mounts_under "$R/mnt")" ]; }
no_process() { [ -z "$(chroot_pids)" ]; }
_all_gone() {
	local p
	for p in "$@"; do _gone "$p" || return 1; done
}
debroot_cleanup() {
	local rc=$? m pids
	for m in $(mounts_under "$R/mnt"); do
		timeout 10 umount -l "$m" 2>/dev/null
	done
	# TERM, then KILL what is left after 10 s; again for any process
	# started meanwhile (a step cut short leaves its children: apt, npm).
	for _ in 1 2 3; do
		pids=$(chroot_pids)
		[ -n "$pids" ] || break
		# shellcheck disable=SC2086 # one pid per word
		kill -TERM $pids 2>/dev/null
		# shellcheck disable=SC2086
		wait_for 10 _all_gone $pids || kill -9 $pids 2>/dev/null
	done
	for m in $(mounts_under "$R"); do
		timeout 10 umount -l "$m" 2>/dev/null
	done
	# Never remove the root while anything is mounted in it (/dev!).
	if [ -d "$R" ] && [ -z "$(mounts_under "$R")" ] && [ -z "${LOCKFS_KEEP:-}" ]; then
		_unseal "$R/mnt"  # lockfs's mountpoints are immutable
		timeout 60 rm -rf --one-file-system "$R"
	fi
	(exit "$rc")
	_cleanup
}
trap debroot_cleanup EXIT

# in_root SECS CMD...: --foreground: timeout must not put CMD in a process
# group of its own, or hold=pgrp would release a lock taken by CMD as soon
# as it exits.
in_root() {
	local secs=$1
	shift
	timeout --foreground "$secs" chroot "$R" /usr/bin/env -i \
		PATH="$ROOT_PATH" \
		HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
		AWS_ACCESS_KEY_ID=fake AWS_SECRET_ACCESS_KEY=fake \
		AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null \
		AWS_SHARED_CREDENTIALS_FILE=/dev/null "$@"
}

not_installed() {
	local p
	for p in "$@"; do
		in_root 10 dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'ok installed' || printf '%s ' "$p"
	done
}

debroot_make() {
	local tb rc
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
}

debroot_mount() {
	mount -t proc proc "$R/proc" && mount --rbind /dev "$R/dev"
}
