#!/usr/bin/env bash
# `packwire hash-file` on the whole attack files of ../shared/sha1dc/vectors
# (the SHAttered PDFs, SHA-mbles, the reduced-round collision): the attacks
# refused with Git's message, the rest hashed as sha1sum does, exit 1 after
# the other files. Skipped when the folder is missing (t-sha1dc.sh checks
# the repository's own copies of the attack blocks).
. "$(dirname "$0")/lib.sh"

V=$PW_SHARED/sha1dc/vectors
if [ ! -f "$V/shattered-1.pdf" ]; then
	echo "skipped: $V is missing"
	exit 77
fi
pw() { "$PACKWIRE" "$@"; }
msg() { echo "SHA-1 appears to be part of a collision attack: $1"; }

for f in shattered-1.pdf shattered-2.pdf; do
	rc=0
	pw hash-file "$V/$f" >out 2>err || rc=$?
	check "$f: exit 1" test "$rc" = 1
	contains "$f: Git's message" err "error: $V/$f: $(msg 38762cf7f55934b34d179ae6a4c80cadccbb7f0a)"
	check "$f: no digest" test ! -s out
done
for f in sha-mbles-1.bin sha-mbles-2.bin; do
	rc=0
	pw hash-file "$V/$f" >out 2>err || rc=$?
	check "$f: exit 1" test "$rc" = 1
	contains "$f: Git's message" err "error: $V/$f: $(msg 8ac60ba76f1999a1ab70223f225aefdc78d4ddc0)"
done
pw hash-file "$V/sha1_reducedsha_coll.bin" >out
same_file "reduced-round collision: plain SHA-1" out <(sha1sum "$V/sha1_reducedsha_coll.bin")
# several files in one call: the clean one printed, exit 1 after all of them
rc=0
pw hash-file "$V/shattered-1.pdf" "$V/sha1_reducedsha_coll.bin" "$V/sha-mbles-2.bin" \
	>out 2>err || rc=$?
check "several files: exit 1 after the others" test "$rc" = 1
same_file "several files: the clean one printed" out <(sha1sum "$V/sha1_reducedsha_coll.bin")
check "several files: two refusals" test "$(grep -c 'collision attack' err)" = 2
# SHA-256 of the same files: no detection, as sha256sum
pw hash-file --object-format=sha256 "$V"/* >out
same_file "sha256: as sha256sum" out <(sha256sum "$V"/*)
finish
