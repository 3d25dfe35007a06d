# shellcheck shell=bash
# peers.sh: the peers bench/cycle.sh and bench/handoff.sh time beside
# lockfs with --peers, sourced by both (not run on its own).
#
#   node     npm dynamodb-lock-client, FailClosed (bench/peers/node_peer.js)
#   python   PyPI python-dynamodb-lock (bench/peers/py_peer.py)
#
# peers_parse SPEC      sets PEERS from --peers[=node,python] (default both)
# peers_install         installs each peer in PEERS once, at a pinned
#                       version, into PEERS_CACHE (default
#                       ~/.cache/lockfs/bench-peers; never into the project or
#                       the system's site-packages): npm install --prefix,
#                       pip install --target. Each download is bounded in
#                       time; if a registry cannot be reached it says which
#                       and exits 2.
# peer_node ARGS...     runs node_peer.js with the cached modules
# peer_py ARGS...       runs py_peer.py with the cached package
#
# python_dynamodb_lock runs on /usr/bin/python3 with the system's boto3
# (Debian python3-boto3; contrib/install-deps bench); only the library
# itself comes from PyPI (--no-deps).

PEER_NODE_PKG=dynamodb-lock-client@0.7.3
PEER_NODE_SDK=aws-sdk@2.1693.0 # its peer dependency (v2), pinned too
PEER_PY_PKG=python-dynamodb-lock==0.9.1
PEER_PY=/usr/bin/python3
PEERS_CACHE=${PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockfs/bench-peers}
PEERS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PEERS=

peers_parse() {
	local spec=$1 p
	[ -z "$spec" ] && spec=node,python
	PEERS=
	for p in ${spec//,/ }; do
		case "$p" in
		node | python) PEERS="$PEERS $p" ;;
		*)
			echo "unknown peer '$p' (--peers=node,python)" >&2
			exit 2
			;;
		esac
	done
}

peers_has() { [[ " $PEERS " == *" $1 "* ]]; }

_peers_fail() { # WHAT REGISTRY LOG [DIR HOW]
	echo "peers: cannot install $1 from $2 (is it reachable from here?)." >&2
	echo "peers: the last lines of $3:" >&2
	tail -n 5 "$3" | sed 's/^/    /' >&2
	if [ -n "${4:-}" ]; then
		echo "peers: leave this peer out with --peers=<the others>, or" \
			"install it by hand: $5 into $4, then touch $4/.installed." >&2
	else
		echo "peers: leave this peer out with --peers=<the others>, or" \
			"install it into $PEERS_CACHE by hand." >&2
	fi
	exit 2
}

peers_install() {
	local d log
	mkdir -p "$PEERS_CACHE"
	if peers_has node; then
		d=$PEERS_CACHE/node-${PEER_NODE_PKG/@/-}-${PEER_NODE_SDK/@/-}
		if [ ! -e "$d/.installed" ]; then
			command -v node >/dev/null && command -v npm >/dev/null || {
				echo "peers: node and npm are needed for $PEER_NODE_PKG" >&2
				exit 2
			}
			echo "peers: installing $PEER_NODE_PKG $PEER_NODE_SDK into $d"
			rm -rf "$d"
			mkdir -p "$d"
			log=$PEERS_CACHE/npm-install.log
			echo '{ "private": true }' >"$d/package.json"
			timeout 300 npm install --prefix "$d" --no-audit --no-fund \
				--fetch-timeout=30000 --fetch-retries=1 \
				"$PEER_NODE_PKG" "$PEER_NODE_SDK" >"$log" 2>&1 ||
				_peers_fail "$PEER_NODE_PKG" "the npm registry" "$log"
			touch "$d/.installed"
		fi
		PEER_NODE_PATH=$d/node_modules
	fi
	if peers_has python; then
		d=$PEERS_CACHE/py-${PEER_PY_PKG/==/-}
		if [ ! -e "$d/.installed" ]; then
			"$PEER_PY" -c 'import boto3' 2>/dev/null || {
				echo "peers: $PEER_PY with boto3 is needed (contrib/install-deps bench)" >&2
				exit 2
			}
			echo "peers: installing $PEER_PY_PKG into $d"
			rm -rf "$d"
			log=$PEERS_CACHE/pip-install.log
			timeout 300 "$PEER_PY" -m pip install --target "$d" --no-deps \
				--no-cache-dir --disable-pip-version-check --timeout 30 \
				--retries 1 "$PEER_PY_PKG" >"$log" 2>&1 ||
				_peers_fail "$PEER_PY_PKG" "PyPI" "$log" "$d" \
					"the package's python_dynamodb_lock/ directory (its __init__.py and python_dynamodb_lock.py, version ${PEER_PY_PKG#*==})"
			touch "$d/.installed"
		fi
		PEER_PY_PATH=$d
		# What is there, installed by pip or by hand, must be the pin.
		v=$(PYTHONPATH=$d "$PEER_PY" -c 'import python_dynamodb_lock as m; print(m.__version__)' 2>&1) || v="unreadable: ${v##*$'\n'}"
		if [ "$v" != "${PEER_PY_PKG#*==}" ]; then
			echo "peers: $d holds python_dynamodb_lock $v, not ${PEER_PY_PKG#*==}; remove it (and its .installed) to install again" >&2
			exit 2
		fi
	fi
}

peer_node() {
	NODE_PATH=$PEER_NODE_PATH timeout 3600 node "$PEERS_DIR/node_peer.js" "$@"
}

peer_py() {
	PYTHONPATH=$PEER_PY_PATH timeout 3600 "$PEER_PY" "$PEERS_DIR/py_peer.py" "$@"
}

# Versions, for the report.
peers_versions() {
	local v=
	peers_has node && v="$v $PEER_NODE_PKG ($PEER_NODE_SDK, node $(node --version))"
	peers_has python && v="$v${v:+;} ${PEER_PY_PKG/==/@} (boto3 $("$PEER_PY" -c 'import boto3; print(boto3.__version__)'), python $("$PEER_PY" -c 'import platform; print(platform.python_version())'))"
	echo "${v# }"
}
