#!/usr/bin/env bash
# The main job (scripts/demo.sh, `make demo`) runs end to end: a SHA-256 and
# a SHA-1 repository served by one `packwire serve`, each cloned over HTTP by
# stock git (protocol v2, the server's object format) and by packwire, a
# commit pushed back by stock git, everything verified (the script checks
# fsck --strict, refs, format, work tree), the server stopped by SIGTERM, and
# OK.
. "$(dirname "$0")/lib.sh"

bash "$PW_SRC/scripts/demo.sh" "$PACKWIRE" >"$T/out" 2>&1 && rc=0 || rc=$?
check "demo exits 0" test "$rc" = 0
check "demo ends with OK" test "$(tail -1 "$T/out")" = OK
contains "demo: served by packwire serve" "$T/out" "server: packwire serve on http://127.0.0.1:"
for algo in sha256 sha1; do
	contains "demo: stock git clone of the $algo repository over http" "$T/out" \
		"http, protocol v2, object-format $algo"
	contains "demo: packwire clone of the $algo repository over http" "$T/out" \
		"http, protocol v2, object-format $algo,"
done
if [ "$(grep -c 'verified: fsck --strict clean, refs equal to the server' "$T/out")" = 4 ] &&
	[ "$(grep -c "verified: server's demo-push is the pushed commit" "$T/out")" = 2 ]; then
	ok "demo: every clone and both pushes verified"
else
	not_ok "demo: not everything verified"
	cat "$T/out"
fi
contains "demo: server stopped cleanly" "$T/out" "server: stopped by SIGTERM, exit 0"
finish
