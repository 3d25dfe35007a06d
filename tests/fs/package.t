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
# The clean root is tests/fs/debroot.sh's: the private mount namespace the
# whole file runs in, the cached base and the fresh copy of it, the skips
# (not root, no mount namespace, no mmdebstrap, no network to the mirror;
# with CI=true each of those fails instead) and the cleanup. Every step has
# a timeout.
#
# Environment: LOCKFS_PKG_BUILD (a configured release build directory to
# package; default: a fresh build under the work directory); the mirror's
# and the cache's are debroot.sh's.
# shellcheck source-path=SCRIPTDIR source=debroot.sh
. "$(dirname "$0")/debroot.sh"

command -v cpack >/dev/null && command -v dpkg-shlibdeps >/dev/null ||
	cannot "cpack or dpkg-shlibdeps is missing (contrib/install-deps build installs them)"

E_R="endpoint=$ENDPOINT,region=us-east-1"

plan 42
t0=$SECONDS

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
debroot_make
debroot_mount
ok $? "/proc and /dev (with /dev/fuse) in the root" || { echo "Bail out! no mounts"; exit 1; }

is "$(not_installed lockfs libfuse3-3 libcurl4 libcjson1 fuse3)" \
	"lockfs libfuse3-3 libcurl4 libcjson1 fuse3 " \
	"the clean root has none of lockfs and its dependencies"

# ---- apt install ./lockfs_VERSION_ARCH.deb -------------------------------
cp "$DEB" "$R/tmp/"
in_root 120 apt-get update >"$WORK/apt-update.log" 2>&1
ok $? "apt-get update in the root" || diag "$(tail -n 10 "$WORK/apt-update.log")"
in_root 240 apt-get install -y "/tmp/$(basename "$DEB")" \
	>"$WORK/apt-install.log" 2>&1
ok $? "apt-get install ./$(basename "$DEB") pulls its dependencies and installs it" ||
	diag "$(tail -n 20 "$WORK/apt-install.log")"
is "$(not_installed lockfs libfuse3-3 libcurl4 libcjson1 fuse3 ca-certificates)" "" \
	"lockfs, libfuse3-3, libcurl4, libcjson1, fuse3 and ca-certificates are installed"

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
wait_for 15 no_mount
ok $? "no lockfs mount is left in the root"
wait_for 15 no_process
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
