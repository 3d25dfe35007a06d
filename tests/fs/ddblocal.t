#!/usr/bin/env bash
# ddblocal.t: contrib/dynamodb-local's fetch when the download goes wrong.
# Every install of the README's two commands starts with it, so its
# failures must say why and leave nothing behind:
# - a registry that cannot be reached: exit 1 with npm's own reason
#   (ECONNREFUSED), not only "failed" (it ran npm with --silent, which
#   hid the reason);
# - a registry over TLS whose CA only the machine's bundle holds (a network
#   that inspects TLS, its CA installed on the host): npm is given the
#   bundle (SSL_CERT_FILE here) and reaches it, where Node's own CAs alone
#   refused it (a fresh Debian 12 root behind such a network could not
#   fetch DynamoDB Local at all); a caller's NODE_EXTRA_CA_CERTS is left
#   as the caller set it;
# - that registry serving a tarball other than the pinned one (consistent
#   with its own integrity field, so npm accepts it): the pinned sha256
#   refuses it, and nothing is unpacked into the cache;
# - and in each case nothing is left in the cache (a failed fetch left its
#   scratch directory there).
# The registry is a Python HTTPS server on 127.0.0.1 with a CA made here
# by openssl; npm runs with settings of this test's own (no user or global
# npmrc, an empty npm cache, no retries).
. "$(dirname "$0")/lib.sh"

# cannot REASON: a tool is missing; with CI=true that fails, not skips.
cannot() {
	[ "${CI:-}" = true ] && { echo "Bail out! $* (CI=true: not skipped)"; exit 1; }
	skip_all "$*"
}
command -v npm >/dev/null || cannot "npm is not installed (contrib/dynamodb-local installs it)"
command -v openssl >/dev/null || cannot "openssl is not installed (contrib/install-deps test installs it)"
command -v python3 >/dev/null || cannot "python3 is not installed (contrib/install-deps test installs it)"

plan 15

PKG=amplify-dynamodb-simulator
VERSION=2.9.30
DDB=$LOCKFS_DDB_SCRIPT

# npm with nothing of the machine's configuration: this test's registry,
# an empty cache, one attempt.
: >"$WORK/npmrc-user"
: >"$WORK/npmrc-global"
export npm_config_userconfig=$WORK/npmrc-user npm_config_globalconfig=$WORK/npmrc-global
export npm_config_cache=$WORK/npm-cache npm_config_fetch_retries=0
export npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false
unset NODE_EXTRA_CA_CERTS SSL_CERT_FILE NODE_OPTIONS

# fetch CACHE: contrib/dynamodb-local fetch into CACHE, at most 120 s;
# OUT (stdout and stderr), RC.
fetch() {
	OUT=$(LOCKFS_CACHE=$1 timeout -k 5 120 "$DDB" fetch 2>&1 </dev/null)
	RC=$?
}

# left_behind CACHE: what a failed fetch left in CACHE (empty: nothing).
left_behind() {
	find "$1" -mindepth 1 2>/dev/null | sed "s|^$1/||" | tr '\n' ' '
}

# 1. Nothing listens on the registry's port.
CLOSED=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
npm_config_registry=http://127.0.0.1:$CLOSED/ fetch "$WORK/c1"
is "$RC" 1 "a registry that refuses connections: fetch exits 1"
like "$OUT" "ECONNREFUSED" "  and says npm's reason (ECONNREFUSED)"
like "$OUT" "npm pack $PKG@$VERSION failed" "  and what failed"
is "$(left_behind "$WORK/c1")" "" "  and leaves nothing in the cache"

# 2. A registry over TLS with a CA of its own, serving a tarball that is
# not the pinned one.
(
	cd "$WORK" &&
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem \
			-days 2 -subj /CN=lockfs-test-ca \
			-addext basicConstraints=critical,CA:TRUE \
			-addext keyUsage=critical,keyCertSign,cRLSign &&
		openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr \
			-subj /CN=127.0.0.1 &&
		printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >srv.ext &&
		openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key \
			-CAcreateserial -days 2 -extfile srv.ext -out srv.pem
) >"$WORK/openssl.log" 2>&1
ok $? "openssl made a CA and a certificate for 127.0.0.1"

mkdir -p "$WORK/pkg/package/emulator"
printf '{"name":"%s","version":"%s"}\n' "$PKG" "$VERSION" >"$WORK/pkg/package/package.json"
echo "not DynamoDB Local" >"$WORK/pkg/package/emulator/DynamoDBLocal.jar"
tar -czf "$WORK/fake.tgz" -C "$WORK/pkg" package
FAKE_SUM=$(sha256sum "$WORK/fake.tgz" | cut -d' ' -f1)

cat >"$WORK/registry.py" <<'EOF'
# A registry of one package over TLS: its packument and its tarball.
import base64, hashlib, http.server, json, ssl, sys
work, pkg, version = sys.argv[1:4]
tgz = open(f"{work}/fake.tgz", "rb").read()
integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        port = self.server.server_address[1]
        if self.path.rstrip("/") == f"/{pkg}":
            url = f"https://127.0.0.1:{port}/{pkg}/-/{pkg}-{version}.tgz"
            body = json.dumps({"name": pkg, "dist-tags": {"latest": version},
                               "versions": {version: {"name": pkg, "version": version,
                                   "dist": {"tarball": url, "integrity": integrity}}}}).encode()
            kind = "application/json"
        elif self.path == f"/{pkg}/-/{pkg}-{version}.tgz":
            body, kind = tgz, "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(f"{work}/srv.pem", f"{work}/srv.key")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(f"{work}/registry.port.tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(f"{work}/registry.port.tmp", f"{work}/registry.port")
srv.serve_forever()
EOF
timeout 600 python3 "$WORK/registry.py" "$WORK" "$PKG" "$VERSION" 2>"$WORK/registry.log" &
REG_PID=$!
trap 'rc=$?; kill $REG_PID 2>/dev/null; wait $REG_PID 2>/dev/null; (exit $rc); _cleanup' EXIT
wait_for 20 test -s "$WORK/registry.port"
ok $? "the registry listens on 127.0.0.1"
export npm_config_registry=https://127.0.0.1:$(cat "$WORK/registry.port" 2>/dev/null)/

# 2a. The caller named extra CAs that do not hold the registry's: npm
# refuses the registry, and says so.
: >"$WORK/other.pem"
NODE_EXTRA_CA_CERTS=$WORK/other.pem SSL_CERT_FILE=$WORK/ca.pem fetch "$WORK/c2"
is "$RC" 1 "a registry whose CA npm is not given: fetch exits 1"
like "$OUT" "[Cc]ertificate|CERT" "  and says npm's reason (the certificate)"
is "$(left_behind "$WORK/c2")" "" "  and leaves nothing in the cache"

# 2b. The machine's bundle holds the registry's CA: npm reaches it, and
# the pinned checksum refuses the tarball.
SSL_CERT_FILE=$WORK/ca.pem fetch "$WORK/c3"
is "$RC" 1 "a tarball other than the pinned one: fetch exits 1"
unlike "$OUT" "[Cc]ertificate|CERT|npm pack .* failed" \
	"  npm reached the registry through the machine's CA bundle"
like "$OUT" "checksum mismatch for $PKG-$VERSION.tgz: got $FAKE_SUM" \
	"  the pinned sha256 refused the tarball, naming the one it got"
is "$(left_behind "$WORK/c3")" "" "  and nothing is unpacked into the cache"
ok "$(test ! -e "$WORK/c3/$PKG-$VERSION/emulator/DynamoDBLocal.jar"; echo $?)" \
	"  no DynamoDBLocal.jar in the cache"

# 3. The script's help says where the CAs come from.
like "$("$DDB" --help)" "NODE_EXTRA_CA_CERTS" "--help names NODE_EXTRA_CA_CERTS"
