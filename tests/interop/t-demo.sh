#!/usr/bin/env bash
# The main job (scripts/demo.sh, `make demo`) runs end to end: a SHA-256 and
# a SHA-1 repository served by packwire upload-pack, each cloned by packwire
# and by stock git over protocol v2 with the server's object format, every
# clone verified (the script checks fsck --strict, refs, work tree) and OK.
. "$(dirname "$0")/lib.sh"

bash "$PW_SRC/scripts/demo.sh" "$PACKWIRE" >"$T/out" 2>&1 && rc=0 || rc=$?
check "demo exits 0" test "$rc" = 0
check "demo ends with OK" test "$(tail -1 "$T/out")" = OK
contains "demo: served by packwire upload-pack" "$T/out" "server: $PACKWIRE upload-pack"
for algo in sha256 sha1; do
	contains "demo: packwire clone of the $algo repository" "$T/out" "protocol v2, object-format $algo,"
done
if [ "$(grep -c 'verified: fsck --strict clean, refs equal to the server' "$T/out")" = 4 ]; then
	ok "demo: all four clones verified"
else
	not_ok "demo: not all clones verified"
	cat "$T/out"
fi
finish
