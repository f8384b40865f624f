#!/usr/bin/env bash
# packwire's HTTP client against a hostile server (tests/interop/http-hostile.py):
# a bad status, a lying Content-Length, an endless body (stopped at the
# 64 MiB bound of docs/limits.md), bytes that are no pkt-lines, a redirect
# loop, a dumb server, failing and broken POST answers. Each is a clear error;
# a clone leaves no directory, a fetch leaves refs and packs as they were.
. "$(dirname "$0")/lib.sh"
# the machine's TLS and proxy settings are not this test's
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY

cd "$T"
make_repo srv sha1 >/dev/null 2>&1
git clone -q srv local
git -C srv commit -q --allow-empty -m "the server moved on"
git clone -q --bare srv srv.git

python3 "$PW_SRC/tests/interop/http-hostile.py" "$T/port" "$T/srv.git" &
SRV=$!
trap 'kill $SRV 2>/dev/null || true; wait $SRV 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -f "$T/port" ] && break; sleep 0.1; done
U=http://127.0.0.1:$(cat "$T/port")

state() { git -C local for-each-ref; ls local/.git/objects/pack; }

# hostile MODE MESSAGE: clone and fetch fail with MESSAGE, nothing written
hostile() {
	local mode=$1 msg=$2 rc
	"$PACKWIRE" clone -q "$U/$mode/r.git" "clone-$mode" 2>"clone-$mode.err" && rc=0 || rc=$?
	check "$mode: clone fails" test "$rc" -ne 0
	contains "$mode: clone's message" "clone-$mode.err" "$msg"
	check "$mode: no directory left by the clone" test ! -e "clone-$mode"
	state >before
	"$PACKWIRE" -C local fetch -q "$U/$mode/r.git" 'refs/heads/*:refs/remotes/x/*' \
		2>"fetch-$mode.err" && rc=0 || rc=$?
	check "$mode: fetch fails" test "$rc" -ne 0
	contains "$mode: fetch's message" "fetch-$mode.err" "$msg"
	state >after
	same_file "$mode: refs and packs unchanged by the fetch" before after
}

# the server works when it means to
check "a sane answer clones" "$PACKWIRE" clone -q --bare "$U/ok/r.git" clone-ok
check "the sane clone is fsck --strict clean" fsck_ok clone-ok
check "the sane clone has the refs" same_refs clone-ok srv.git

hostile status "fatal: unable to access '$U/status/r.git/': The requested URL returned error: 500"
hostile lying "fatal: unable to access '$U/lying/r.git/': transfer closed with"
hostile endless "the ref advertisement is larger than 67108864 bytes"
hostile badpkt "fatal: protocol error: bad line length character"
hostile loop "fatal: unable to access '$U/loop/r.git/': Maximum (20) redirects followed"
hostile dumb "dumb HTTP: HEAD line 1"
hostile postfail "RPC failed; HTTP 500"
hostile postjunk "fatal: "
hostile postcut "fatal: "
for v in 0 2; do
	"$PACKWIRE" -c protocol.version=$v clone -q "$U/postcut/r.git" cut-$v 2>cut-$v.err || true
	check "postcut v$v: no directory left" test ! -e cut-$v
done

finish
