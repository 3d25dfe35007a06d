#!/usr/bin/env bash
# fs-run: alone (installs a compiler, Node and Java in a root, builds lockfs)
# fresh.t: README's first command on a fresh machine. In a clean, minimal
# Debian 12 root (tests/fs/debroot.sh: mmdebstrap minbase + man-db and
# nothing else), with this working tree in /root/lockfs (its tracked files
# and its untracked ones that are not ignored: no build directory), runs
# `contrib/quickstart` as README says: as root, from the clone, in a clean
# environment, no terminal. It must install what is missing (compiler,
# libraries, ca-certificates, nodejs and npm, a Java runtime), build,
# fetch DynamoDB Local with npm from the registry (from inside the root: no
# cache of the host is bound in), start it on loopback, create the table
# and mount /mnt/locks. Then, in the root, a lock is taken with set -C,
# refused to a second set -C, read (state: held, a fence), listed by ls -l
# (with a time of day), released with rm, then taken and released again;
# `contrib/quickstart --stop` then leaves no mount and no process in the
# root (the daemon and DynamoDB Local's java gone).
#
# The root is set up as a machine on this network is: the host's
# resolv.conf and its extra CA certificates (/usr/local/share/ca-
# certificates/*.crt). This network inspects TLS, so a machine on it
# trusts the inspecting CA; the quickstart installs ca-certificates, whose
# postinst runs update-ca-certificates, which adds them to the root's
# bundle (checked here: the bundle holds them after the quickstart).
# Debian's nodejs trusts that bundle, and contrib/dynamodb-local gives it
# to npm as well (NODE_EXTRA_CA_CERTS) for a Node that would not. Without
# the CA in the root, npm pack fails (self-signed certificate in chain).
#
# Skips where the machine cannot make a clean root (debroot.sh) or cannot
# reach the npm registry; with CI=true each of those fails instead. The
# quickstart may take QS_SECS (240 s; it takes 50 to 75 s, the whole file
# 60 to 80 s, 20 s more when the base root is made; run.sh gives a file
# 300 s); every other step is bounded too, and the EXIT trap (debroot.sh's)
# unmounts, kills every process of the root and removes it, however the
# file ends.
# shellcheck source-path=SCRIPTDIR source=debroot.sh
. "$(dirname "$0")/debroot.sh"

NPM_REGISTRY=https://registry.npmjs.org
net_up "$NPM_REGISTRY/-/ping" 2>"$WORK/npm.err" ||
	cannot_run "no network to the npm registry $NPM_REGISTRY, where the quickstart fetches DynamoDB Local ($(head -c 200 "$WORK/npm.err"))"
if ! git -C "$_root" rev-parse --git-dir >/dev/null 2>&1; then
	cannot_run "$_root is not a git working tree (or git is missing): no tree to copy"
fi

QS_SECS=240
SRC=/root/lockfs

plan 23
t0=$SECONDS

# ---- the fresh machine --------------------------------------------------------
debroot_make

qs_pkgs=(gcc cmake libfuse3-dev fuse3 ca-certificates nodejs npm default-jre-headless)
is "$(not_installed "${qs_pkgs[@]}")" "${qs_pkgs[*]} " \
	"the root has none of what the quickstart installs (${qs_pkgs[*]})"

# The working tree as a clone of it would be, with today's edits: tracked
# (as they are on disk) and untracked files, not the ignored ones (build
# directories). A file deleted but still tracked is left out.
mkdir -p "$R$SRC"
git -C "$_root" ls-files -z --cached --others --exclude-standard >"$WORK/files" &&
	timeout 60 tar -C "$_root" --null -T "$WORK/files" --ignore-failed-read -cf - \
		2>"$WORK/tar.err" | timeout 60 tar -C "$R$SRC" -xf -
rc=$?
n=$(tr -cd '\0' <"$WORK/files" | wc -c)
ok "$([ "$rc" = 0 ] && [ -x "$R$SRC/contrib/quickstart" ] &&
	! compgen -G "$R$SRC/build*" >/dev/null; echo $?)" \
	"the working tree ($n files, no build directory) is in $SRC" ||
	diag "$(head -n 5 "$WORK/tar.err")"

# This network inspects TLS: a machine on it has its resolver and trusts
# the inspecting CA (it is in /usr/local/share/ca-certificates, for
# update-ca-certificates). Nothing else of the host goes in.
shopt -s nullglob
cas=(/usr/local/share/ca-certificates/*.crt)
shopt -u nullglob
mkdir -p "$R/usr/local/share/ca-certificates"
rc=0
[ ${#cas[@]} -eq 0 ] || cp "${cas[@]}" "$R/usr/local/share/ca-certificates/" || rc=1
ok "$([ "$rc" = 0 ] && cmp -s /etc/resolv.conf "$R/etc/resolv.conf"; echo $?)" \
	"the host's resolv.conf and its ${#cas[@]} extra CA certificates are in the root"

debroot_mount && mount --rbind /sys "$R/sys" && mount -t tmpfs tmpfs "$R/tmp"
ok $? "/proc, /dev (with /dev/fuse), /sys and a tmpfs /tmp in the root" ||
	{ echo "Bail out! no mounts"; exit 1; }

# ---- README's first command ---------------------------------------------------
# quickstart SECS LOG [ARGS]: contrib/quickstart in the root as README runs
# it: from the clone, as root, in a clean environment, stdin /dev/null. At
# most SECS (timeout kills its whole process group: apt, npm). Waited for
# in the background, so that a signal to this file (run.sh's timeout)
# ends the wait at once and the cleanup runs. Its exit status in $?.
quickstart() {
	local secs=$1 log=$2
	shift 2
	timeout -k 10 "$secs" chroot "$R" /usr/bin/env -i HOME=/root \
		PATH="$ROOT_PATH" CI=true TERM=dumb \
		/bin/sh -c 'cd "$0" && exec contrib/quickstart "$@"' "$SRC" "$@" \
		</dev/null >"$log" 2>&1 &
	wait $!
}

tq=$SECONDS
quickstart "$QS_SECS" "$WORK/quickstart.log"
rc=$?
qs_s=$((SECONDS - tq))
out=$(cat "$WORK/quickstart.log")
is "$rc" 0 "contrib/quickstart in the root: exit 0 ($qs_s s)" || {
	[ "$rc" = 124 ] && diag "timed out after $QS_SECS s"
	diag "$(tail -n 25 <<<"$out")"
	[ -s "$R/root/.cache/lockfs/quickstart/log" ] &&
		diag "DynamoDB Local's log: $(tail -n 10 "$R/root/.cache/lockfs/quickstart/log")"
}
# (Its output is in the diagnostics above when it failed.)
grep -Eqx 'quickstart: \[4/5\] DynamoDB Local up at http://127\.0\.0\.1:[0-9]+, table lockfs created' <<<"$out"
ok $? "it says DynamoDB Local is up on loopback and the table was created"
grep -qx 'quickstart: lockfs mounted on /mnt/locks' <<<"$out"
ok $? "it says lockfs is mounted on /mnt/locks"
is "$(findmnt -n -o FSTYPE,SOURCE -M "$R/mnt/locks" | tr -s ' ')" "fuse.lockfs lockfs:lockfs" \
	"/mnt/locks in the root is a lockfs mount of the table lockfs"
jars=("$R"/root/.cache/lockfs/amplify-dynamodb-simulator-*/emulator/DynamoDBLocal.jar)
ok "$([[ $out == *'with npm pack'* ]] && [ -f "${jars[0]}" ]; echo $?)" \
	"it fetched DynamoDB Local with npm in the root (${jars[0]#"$R"})"

# certs FILE...: each certificate's base64 body on a line of its own.
certs() {
	awk '/-----BEGIN CERTIFICATE-----/ { c = ""; on = 1; next }
		/-----END CERTIFICATE-----/ { if (on) print c; on = 0; next }
		on { gsub(/[ \t\r]/, ""); c = c $0 }' "$@" 2>/dev/null | sort -u
}
bundle=$R/etc/ssl/certs/ca-certificates.crt
lost=$(comm -23 <(certs "${cas[@]}" /dev/null) <(certs "$bundle") | wc -l)
ok "$([ -s "$bundle" ] && [ "$lost" = 0 ]; echo $?)" \
	"the root's CA bundle holds the host's ${#cas[@]} extra CA certificates (ca-certificates' postinst ran update-ca-certificates)" ||
	diag "$lost of them missing from $bundle"

# ---- a lock, as README's "Try it" -------------------------------------------
# hold=pgrp: the lock taken by the shell in the root is held by this file's
# process group (in_root keeps it) until rm.
in_root 20 sh -c 'set -C; : > /mnt/locks/deploy'
ok $? "set -C; : > /mnt/locks/deploy acquires"
out=$(in_root 20 sh -c 'set -C; : > /mnt/locks/deploy' 2>&1)
rc=$?
ok $((rc == 0)) "a second set -C is refused ($out)"
out=$(in_root 20 cat /mnt/locks/deploy 2>&1)
like "$out" $'(^|\n)state: held(\n|$)' "cat shows state: held" || diag "$out"
like "$out" $'(^|\n)fence: [0-9]+(\n|$)' "... and a fence"
out=$(in_root 20 ls -l /mnt/locks 2>&1)
like "$out" $'(^|\n)-[-rwx]{9}[.+]? +[0-9]+ +[^ ]+ +[^ ]+ +[0-9]+ +[A-Z][a-z]{2} +[0-9]{1,2} +[0-9]{2}:[0-9]{2} deploy(\n|$)' \
	"ls -l /mnt/locks lists deploy with a time of day"
in_root 20 rm /mnt/locks/deploy
ok $? "rm /mnt/locks/deploy releases it"
in_root 20 sh -c 'set -C; : > /mnt/locks/deploy'
ok $? "then a fresh set -C takes it"
in_root 20 rm /mnt/locks/deploy
ok $? "... and rm releases it again"

# ---- contrib/quickstart --stop ------------------------------------------------
quickstart 90 "$WORK/stop.log" --stop
is "$?" 0 "contrib/quickstart --stop: exit 0" || diag "$(cat "$WORK/stop.log")"
wait_for 15 no_mount
ok $? "no mount is left under the root's /mnt" || diag "$(mounts_under "$R/mnt")"
wait_for 30 no_process
ok $? "no process is left in the root (the daemon and DynamoDB Local's java are gone)" ||
	for p in $(chroot_pids); do diag "$p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done
diag "fresh.t took $((SECONDS - t0)) s (the quickstart $qs_s s)"
