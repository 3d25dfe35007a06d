#!/usr/bin/env bash
# bench/fuzz.sh: a fuzzing campaign over every libFuzzer target of
# tests/fuzz. Builds them with clang (every lockfs_* library instrumented,
# AddressSanitizer + UndefinedBehaviorSanitizer), runs each in turn (or N at
# a time) for a time or a number of executions, and prints per target the
# executions, the speed, the coverage (libFuzzer's cov: edges and ft:
# features at the end), the corpus size and the findings. Grown corpora are
# kept in a cache and used again by the next campaign; the seeds stay in
# tests/fuzz/corpus. Exits 1 when any target found something (its inputs
# are in the cache's artifacts/), 2 on a usage or build error.
#
#   bench/fuzz.sh                      every target, 60 s each
#   bench/fuzz.sh -t 600 -r 10000000   each until 10 M executions or 600 s
#   bench/fuzz.sh -j 2 -T 'creds_.*'   two at a time, the credential targets
#
# Options:
#   -t SECONDS   time per target (default 60; 0: no limit, needs -r)
#   -r RUNS      executions per target (default: no limit, needs -t)
#   -j JOBS      targets run at the same time (default 1: these machines
#                have 2 cores, shared)
#   -T REGEX     only targets whose name (e.g. store_record) matches
#   -B DIR       build directory (default build-fuzz)
#   -C DIR       cache (default ${XDG_CACHE_HOME:-~/.cache}/lockfs/fuzz)
#   -n           do not build (use the binaries in the build directory)
#   -l           list the targets and exit
# Environment: CC (default clang), FUZZ_ARGS (more libFuzzer flags).
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
TIME=60
RUNS=
JOBS=1
ONLY=.
BUILD=$ROOT/build-fuzz
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/lockfs/fuzz
DO_BUILD=1
LIST=0

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while getopts "t:r:j:T:B:C:nlh" opt; do
	case $opt in
	t) TIME=$OPTARG ;;
	r) RUNS=$OPTARG ;;
	j) JOBS=$OPTARG ;;
	T) ONLY=$OPTARG ;;
	B) BUILD=$(realpath -m "$OPTARG") ;;
	C) CACHE=$(realpath -m "$OPTARG") ;;
	n) DO_BUILD=0 ;;
	l) LIST=1 ;;
	h) usage 0 ;;
	*) usage 2 >&2 ;;
	esac
done
case "$TIME$RUNS$JOBS" in *[!0-9]*) echo "fuzz.sh: -t, -r and -j take numbers" >&2; exit 2 ;; esac
if [ "$TIME" = 0 ] && [ -z "$RUNS" ]; then
	echo "fuzz.sh: -t 0 needs -r" >&2
	exit 2
fi
[ "$JOBS" -ge 1 ] || JOBS=1

targets=()
for f in tests/fuzz/fuzz_*.c; do
	t=$(basename "$f" .c)
	t=${t#fuzz_}
	[[ $t =~ $ONLY ]] && targets+=("$t")
done
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz.sh: no target matches '$ONLY'" >&2
	exit 2
fi
if [ "$LIST" = 1 ]; then
	printf '%s\n' "${targets[@]}"
	exit 0
fi

if [ "$DO_BUILD" = 1 ]; then
	"$ROOT/contrib/install-deps" fuzz ||
		{ echo "fuzz.sh: clang and its fuzzer runtime are missing" >&2; exit 2; }
	echo "fuzz.sh: building the instrumented targets in $BUILD"
	mkdir -p "$BUILD"
	CC=${CC:-clang} cmake -S "$ROOT" -B "$BUILD" -DLOCKFS_FUZZ=ON \
		-DLOCKFS_ASAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>"$BUILD/fuzz-cmake.log" 2>&1 ||
		{ tail -20 "$BUILD/fuzz-cmake.log"; echo "fuzz.sh: cmake failed" >&2; exit 2; }
	cmake --build "$BUILD" -j "$(nproc)" --target fuzz-targets \
		>"$BUILD/fuzz-build.log" 2>&1 ||
		{ tail -40 "$BUILD/fuzz-build.log"; echo "fuzz.sh: build failed" >&2; exit 2; }
fi

mkdir -p "$CACHE/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: libFuzzer on its cached corpus (new inputs go there) and its
# seeds, with its dictionary if it has one.
run_one() {
	local t=$1 bin=$BUILD/tests/fuzz/fuzz_$1 corpus=$CACHE/corpus/$1
	local art=$CACHE/artifacts/$1/ log=$CACHE/logs/$1.log dict=tests/fuzz/dict/$1.dict
	local args=(-print_final_stats=1 -timeout=25 -rss_limit_mb=2048
		-artifact_prefix="$art")

	mkdir -p "$corpus" "$art"
	[ -f "$dict" ] && args+=(-dict="$dict")
	[ "$TIME" != 0 ] && args+=(-max_total_time="$TIME")
	[ -n "$RUNS" ] && args+=(-runs="$RUNS")
	if [ ! -x "$bin" ]; then
		echo "fuzz.sh: $bin is missing (build with -DLOCKFS_FUZZ=ON)" >"$log"
		return
	fi
	# shellcheck disable=SC2086
	"$bin" "${args[@]}" ${FUZZ_ARGS:-} "$corpus" "tests/fuzz/corpus/$t" \
		>"$log" 2>&1
	echo "exit: $?" >>"$log"
}

# Its line of the summary, from the log.
report() {
	local t=$1 log=$CACHE/logs/$1.log
	local execs rate cov ft corp units findings rc

	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	units=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
	cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -Eo 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
	corp=$(find "$CACHE/corpus/$t" -type f 2>/dev/null | wc -l)
	findings=$(find "$CACHE/artifacts/$t" -type f -newer "$CACHE/.start" 2>/dev/null | wc -l)
	rc=$(sed -n 's/^exit: //p' "$log" | tail -1)
	[ "${rc:-1}" != 0 ] && [ "$findings" = 0 ] && findings=1
	printf '%-14s %12s %9s %7s %8s %7s %6s %8s\n' "$t" "${execs:-?}" \
		"${rate:-?}" "${cov:-?}" "${ft:-?}" "$corp" "${units:-?}" "$findings"
	[ "$findings" = 0 ]
}

touch "$CACHE/.start"
start=$SECONDS
echo "fuzz.sh: ${#targets[@]} targets, ${TIME}s${RUNS:+ or $RUNS runs} each, $JOBS at a time; cache $CACHE"
running=0
for t in "${targets[@]}"; do
	if [ "$running" -ge "$JOBS" ]; then
		wait -n
		running=$((running - 1))
	fi
	echo "fuzz.sh: $t"
	run_one "$t" &
	running=$((running + 1))
done
wait

echo
printf '%-14s %12s %9s %7s %8s %7s %6s %8s\n' target executions exec/s cov ft corpus new findings
bad=0 total=0
for t in "${targets[@]}"; do
	report "$t" || bad=$((bad + 1))
	n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$CACHE/logs/$t.log" | tail -1)
	total=$((total + ${n:-0}))
done
echo
echo "fuzz.sh: $total executions in $((SECONDS - start)) s, $bad target(s) with findings"
if [ "$bad" -gt 0 ]; then
	echo "fuzz.sh: see $CACHE/logs/ and the inputs in $CACHE/artifacts/" >&2
	exit 1
fi
exit 0
