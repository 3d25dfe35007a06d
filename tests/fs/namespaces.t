#!/usr/bin/env bash
# namespaces.t: a name is a lock or a namespace, never both, and DynamoDB
# decides it (issue 7, items 10 and 11), on two real mounts through the
# fault proxy with a 3 ms delay each way:
#  - mkdir on A racing `set -C; : > file` on B, 20 names, both started at
#    the same instant: exactly one of them succeeds for each name, and both
#    mounts show the same thing (a directory marker is the lock item of its
#    name, so the two conditional writes decide);
#  - rmdir of a namespace on A racing a create inside it on B: whatever the
#    order, no name ends up both, and a lock made inside stays visible (if
#    both succeed, B writes the marker back within a few seconds);
#  - a lock seen expired is taken over by mkdir, as an acquire takes it;
#  - st_nlink of a directory is 2 + its subdirectories (1 until this mount
#    has listed it or made it), kept by this mount's mkdir and rmdir; its
#    mtime and ctime advance on a create, unlink or automatic release through
#    this mount, and on a listing that shows another mount's change.
. "$(dirname "$0")/lib.sh"

plan 47

new_table || { echo "Bail out! cannot create a table"; exit 1; }
proxy_start || { echo "Bail out! cannot start the proxy"; exit 1; }
ENDPOINT=$PROXY_ENDPOINT
OPT=entry_timeout=0,attr_timeout=0
# Default leases (an HTTP attempt may take 5 s on a loaded machine); C's
# short lease is for the lock that lapses.
mount_start a "owner=ns-a,$OPT" && mount_start b "owner=ns-b,$OPT" &&
	mount_start c "owner=ns-c,lease=3,heartbeat=0.5,safe_period=2,$OPT" ||
	{ echo "Bail out! cannot mount"; exit 1; }
A=$(mnt a) B=$(mnt b) C=$(mnt c)
proxy_ctl latency 3 >/dev/null
ok $? "the proxy delays every request and answer by 3 ms"

# kind PATH: dir, file or none, as lockfs-t stat sees it.
kind() {
	local s
	s=$("$T" stat "$1" 2>&1)
	case $s in
	*mode=04[01]*) echo dir ;;
	*mode=0100*) echo file ;;
	*) echo none ;;
	esac
}
fieldof() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
nlink() { fieldof "$("$T" stat "$1")" nlink; }
mtime() { fieldof "$("$T" stat "$1")" mtime | tr -d .; }
ctime() { fieldof "$("$T" stat "$1")" ctime | tr -d .; }

# race GATE CMD1 CMD2: runs both (bash -c) at the same instant, as soon as
# GATE is unlocked; prints their exit statuses.
GATE=$WORK/gate
race() {
	local r1=$WORK/race1 r2=$WORK/race2
	rm -f "$r1" "$r2"
	exec 8>"$GATE"
	flock -x 8
	(flock -s "$GATE" bash -c "$1"; echo $? >"$r1") 2>/dev/null &
	local p1=$!
	(flock -s "$GATE" bash -c "$2"; echo $? >"$r2") 2>/dev/null &
	local p2=$!
	sleep 0.1
	flock -u 8
	exec 8>&-
	_reap "$p1" 30 >/dev/null
	_reap "$p2" 30 >/dev/null
	echo "$(cat "$r1" 2>/dev/null || echo x) $(cat "$r2" 2>/dev/null || echo x)"
}

# ---- 10. mkdir on A racing O_EXCL on B -------------------------------------
both=0 neither=0 dirs=0 locks=0 disagree=0 unknown=0
for i in $(seq 1 20); do
	read -r rm rc < <(race "mkdir '$A/x$i'" "set -C; : > '$B/x$i'")
	case "$rm $rc" in
	"0 0") both=$((both + 1)) ;;
	"0 1") dirs=$((dirs + 1)) ;;
	"1 0") locks=$((locks + 1)) ;;
	"1 1") neither=$((neither + 1)) ;;
	*) unknown=$((unknown + 1)) ;;
	esac
	ka=$(kind "$A/x$i") kb=$(kind "$B/x$i")
	want=none
	[ "$rm" = 0 ] && want=dir
	[ "$rc" = 0 ] && want=file
	[ "$rm $rc" = "0 0" ] && want=both
	if [ "$ka" != "$kb" ] || [ "$ka" != "$want" ]; then
		disagree=$((disagree + 1))
		diag "x$i: mkdir $rm, create $rc; A sees $ka, B sees $kb"
	fi
done
diag "20 races: $dirs directories, $locks locks, $both both, $neither neither"
is "$both" 0 "mkdir A/x racing set -C; : > B/x: never both succeed (20 names)"
is "$neither$unknown" 00 "and one of them always does"
is "$disagree" 0 "both mounts see what won, as a directory or as a lock"
unlike "$(ls -l "$A" "$B" 2>&1)" '\?' "ls -l shows no entry it cannot stat on either mount"
ok "$([ "$dirs" -gt 0 ] && [ "$locks" -gt 0 ] && echo 0)" \
	"both sides won some races (the races were real)"
# The losers' side sees it too: a lock where a directory won is refused.
d=none
for i in $(seq 1 20); do
	[ "$(kind "$A/x$i")" = dir ] && { d=x$i; break; }
done
[ "$d" = none ] && { d=xd; "$T" mkdir "$A/$d" 0755 >/dev/null; }
expect EEXIST open "$B/$d" O_CREAT,O_EXCL,O_RDWR
expect EISDIR open "$B/$d" O_CREAT,O_RDWR
expect EEXIST mkdir "$B/$d" 0755
expect 0 rmdir "$A/$d"
expect 0 open "$B/$d" O_CREAT,O_EXCL,O_RDWR
expect EEXIST mkdir "$A/$d" 0755
expect 0 unlink "$B/$d"

# ---- 10. rmdir on A racing a create inside on B ------------------------------
first=0 lockfirst=0 incoherent=0
for i in $(seq 1 10); do
	"$T" mkdir "$A/ns$i" 0755 >/dev/null
	[ "$(kind "$B/ns$i")" = dir ] || diag "B does not see ns$i"
	read -r rr rc < <(race "rmdir '$A/ns$i'" "set -C; : > '$B/ns$i/l'")
	case "$rr $rc" in
	"0 0") first=$((first + 1)); want="dir dir file file" ;;
	"0 1") want="none none none none" ;;
	"1 0") lockfirst=$((lockfirst + 1)); want="dir dir file file" ;;
	*) want="?" ;;
	esac
	# Both succeeded: b's create landed after a's rmdir looked again; b
	# reads ns again a second after its write and puts the marker back.
	views() {
		rawa=$("$T" stat "$A/ns$i" 2>&1) rawb=$("$T" stat "$B/ns$i" 2>&1)
		ka=$(kind "$A/ns$i") kb=$(kind "$B/ns$i")
		la=$(kind "$A/ns$i/l") lb=$(kind "$B/ns$i/l")
		[ "$ka $kb $la $lb" = "$want" ]
	}
	wait_for 5 views
	if [ "$ka $kb $la $lb" != "$want" ]; then
		incoherent=$((incoherent + 1))
		diag "ns$i: rmdir $rr, create $rc; A: ns $ka l $la; B: ns $kb l $lb ($rawa / $rawb)"
	fi
	[ "$rc" = 0 ] && "$T" unlink "$B/ns$i/l" >/dev/null
	"$T" rmdir "$A/ns$i" >/dev/null 2>&1
done
diag "10 races: rmdir first then create $first, create first (rmdir ENOTEMPTY) $lockfirst"
is "$incoherent" 0 "rmdir A/ns racing set -C; : > B/ns/l: every outcome is one the two calls in some order give, on both mounts"
unlike "$(ls -lR "$A" "$B" 2>&1)" '\?' "ls -lR shows no entry it cannot stat"

# ---- 10. mkdir over a lock seen expired ---------------------------------------
hold_start e --pgrp "$C/lapsed" O_CREAT,O_EXCL,O_RDWR 0644
is "$HOUT" ready "C holds lapsed (lease 3 s)"
expect EEXIST mkdir "$A/lapsed" 0755
mount_kill c KILL   # no release: the row stays and lapses after its lease
hold_stop e
kind "$A/lapsed" >/dev/null   # A's first sighting of the row
sleep 3.5
expect 0 mkdir "$A/lapsed" 0755
is "$(kind "$A/lapsed")" dir "a lock seen lapsed (a lease without heartbeat) is taken over by mkdir"
is "$(kind "$B/lapsed")" dir "and B sees the directory"
expect 0 rmdir "$B/lapsed"

# ---- 11. st_nlink and the times of a directory -------------------------------
expect 0 mkdir "$A/d" 0755
is "$(nlink "$A/d")" 2 "a directory just made has st_nlink 2"
expect 0 mkdir "$A/d/s1" 0755
expect 0 mkdir "$A/d/s2" 0755
is "$(nlink "$A/d")" 4 "two subdirectories made: st_nlink 4"
expect 0 rmdir "$A/d/s1"
is "$(nlink "$A/d")" 3 "one removed: st_nlink 3"
is "$(nlink "$B/d")" 1 "B, which never listed d, does not know its count: st_nlink 1"
ls "$B/d" >/dev/null
is "$(nlink "$B/d")" 3 "after B lists d: st_nlink 3 there too"
ls -a "$A" >/dev/null
n_root=$(ls -la "$A" | grep -c '^d')   # . and .. and the subdirectories
is "$(nlink "$A")" "$n_root" "the root's st_nlink is 2 + its subdirectories (.lockfs included)"

m0=$(mtime "$A/d") c0=$(ctime "$A/d")
sleep 0.05
expect 0 open "$A/d/l" O_CREAT,O_EXCL,O_RDWR
m1=$(mtime "$A/d")
ok "$([ "$m1" -gt "$m0" ] && [ "$(ctime "$A/d")" -gt "$c0" ] && echo 0)" \
	"a create in d advances its mtime and ctime ($m0 -> $m1)"
sleep 0.05
expect 0 unlink "$A/d/l"
m2=$(mtime "$A/d")
ok "$([ "$m2" -gt "$m1" ] && echo 0)" "an unlink in d advances its mtime ($m1 -> $m2)"
sleep 0.05
expect 0 mkdir "$A/d/s3" 0755
m3=$(mtime "$A/d")
ok "$([ "$m3" -gt "$m2" ] && echo 0)" "a mkdir in d advances its mtime"
timeout 10 setsid bash -c ': > "$1/d/auto"' _ "$A"
wait_for 10 test "$(kind "$A/d/auto")" = none
gone() { [ "$(kind "$A/d/auto")" = none ] && [ "$(mtime "$A/d")" -gt "$m3" ]; }
wait_for 10 gone
ok $? "a lock released automatically (its process group ended) advances d's mtime"
m4=$(mtime "$A/d")
ls "$A/d" >/dev/null
is "$(mtime "$A/d")" "$m4" "a listing that shows nothing new leaves it"
sleep 0.05
expect 0 open "$B/d/fromb" O_CREAT,O_EXCL,O_RDWR
is "$(mtime "$A/d")" "$m4" "a create on B is not seen by A's stat alone (no request per stat)"
ls "$A/d" >/dev/null
ok "$([ "$(mtime "$A/d")" -gt "$m4" ] && echo 0)" \
	"A's next listing of d shows B's create and advances d's mtime"
expect 0 unlink "$B/d/fromb"
expect 0 rmdir "$A/d/s2"
expect 0 rmdir "$A/d/s3"
is "$(nlink "$A/d")" 2 "every subdirectory removed: st_nlink 2"
expect 0 rmdir "$A/d"

