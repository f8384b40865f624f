#!/bin/bash
# Commands naming one ref twice (issue 11, Git's t5408): packwire
# receive-pack runs them in order as git receive-pack does, so the first
# update wins and the second fails on the ref's lock ("reference already
# exists"); with --atomic the transaction is refused as a whole with Git's
# message. Compared with git receive-pack, SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"

RP="$PACKWIRE receive-pack"

for algo in sha1 sha256; do
	C=$T/c-$algo
	make_repo "$C" "$algo"
	git -C "$C" branch A main~1
	git -C "$C" branch B main
	for at in "" --atomic; do
		for who in git pw; do
			rp=git-receive-pack
			[ $who = pw ] && rp=$RP
			S=$T/s-$algo.git # one path: "To <path>" is in the messages
			rm -rf "$S"
			git init -q --bare --object-format="$algo" "$S"
			git -C "$C" send-pack $at --receive-pack="$rp" "$S" A:foo B:foo >"$T/out-$who" 2>&1 &&
				not_ok "$algo $at: the push of one ref twice succeeded ($who)"
			refs "$S" >"$T/refs-$who"
		done
		same_file "$algo $at: the same refs as with git receive-pack" "$T/refs-git" "$T/refs-pw"
		same_file "$algo $at: the same messages" "$T/out-git" "$T/out-pw"
	done
	check "$algo: --atomic wrote nothing" test ! -s "$T/refs-pw"
	git -C "$C" send-pack --receive-pack="$RP" "$S" A:foo B:foo >/dev/null 2>&1 || true
	check "$algo: without --atomic foo is A" \
		test "$(git -C "$S" rev-parse foo)" = "$(git -C "$C" rev-parse A)"
done
finish
