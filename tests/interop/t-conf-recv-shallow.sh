#!/bin/bash
# packwire receive-pack and shallow repositories, against stock git push,
# SHA-1 and SHA-256 (Git's t5538/t5542): a push from a shallow clone whose
# history joins ours is accepted; one that would need the client's shallow
# roots is refused ("shallow update not allowed") unless
# receive.shallowUpdate adds them to our shallow file; pushes into a
# shallow repository (from shallow and full clones), with fsck on; the
# shallow file is advertised.
. "$(dirname "$0")/lib.sh"

RP="$PACKWIRE receive-pack"
commit() { echo "$2" >"$1/f" && git -C "$1" add f && git -C "$1" commit -q -m "$2"; }
log() { git -C "$1" log --format=%s "$2" | tr '\n' ' '; }

for algo in sha1 sha256; do
	F=$T/full-$algo A=$T/abc-$algo S=$T/sh-$algo S2=$T/sh2-$algo
	git init -q --object-format="$algo" "$F"
	for i in 1 2 3 4; do commit "$F" $i; done
	git init -q --object-format="$algo" "$A"
	for i in a b c; do commit "$A" $i; done
	git clone -q --no-local --depth=2 "$F" "$S"
	git clone -q --no-local --depth=2 "$A" "$S2"
	git -C "$F" config transfer.fsckObjects true
	git -C "$S2" config transfer.fsckObjects true

	commit "$S" 5
	check "$algo: push from a shallow clone onto full history" \
		git -C "$S" push -q --receive-pack="$RP" "$F" +main:refs/remotes/shallow/main
	check "$algo: ... complete history" test "$(log "$F" shallow/main)" = "5 4 3 2 1 "
	check "$algo: ... fsck" fsck_ok "$F"
	check_fails "$algo: push needing the client's shallow roots" \
		git -C "$S2" push --receive-pack="$RP" "$F" +main:refs/remotes/shallow2/main 2>"$T/err"
	contains "$algo: ... refused" "$T/err" "shallow update not allowed"
	check_fails "$algo: ... no ref" git -C "$F" rev-parse -q --verify shallow2/main
	git -C "$F" config receive.shallowUpdate true
	check "$algo: receive.shallowUpdate accepts it" \
		git -C "$S2" push -q --receive-pack="$RP" "$F" +main:refs/remotes/shallow2/main
	check "$algo: ... the root joins our shallow file" test "$(cat "$F/.git/shallow")" = "$(cat "$S2/.git/shallow")"
	check "$algo: ... history ends there" test "$(log "$F" shallow2/main)" = "c b "
	check "$algo: ... fsck" fsck_ok "$F"
	$RP --advertise-refs "$F" >"$T/adv"
	contains "$algo: a shallow repository advertises its shallow commits" "$T/adv" "shallow $(cat "$F/.git/shallow")"

	git -C "$S2" config receive.shallowUpdate true
	check "$algo: push from shallow to shallow" \
		git -C "$S" push -q --receive-pack="$RP" "$S2" +main:refs/remotes/shallow/main
	check "$algo: ... history" test "$(log "$S2" shallow/main)" = "5 4 3 "
	check "$algo: ... fsck" fsck_ok "$S2"
	git -C "$S2" config receive.shallowUpdate false
	git -C "$F" checkout -q main
	commit "$F" 6
	check "$algo: push from full to shallow" \
		git -C "$F" push -q --receive-pack="$RP" "$S2" +main:refs/remotes/top/main
	check "$algo: ... history" test "$(log "$S2" top/main)" = "6 4 3 "
	check "$algo: ... fsck" fsck_ok "$S2"
done
finish
