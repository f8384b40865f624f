#!/bin/bash
# packwire receive-pack (and upload-pack for hideRefs) against stock git
# push/ls-remote, SHA-1 and SHA-256, for what Git's own t5400/t5504/t5516
# check: transfer/receive/uploadpack.hideRefs (with "!" negation), hook
# input when a push deletes a ref that does not exist, receive.autogc,
# ".have" lines from alternates without duplicates, and receive.fsck.*
# (message ids with warn/ignore, skipList, "Cannot demote", badFilemode
# only a warning), pushes into aliased refs (a symref and its target in one
# push), and receive.unpackLimit / transfer.unpackLimit (small pushes become
# loose objects).
. "$(dirname "$0")/lib.sh"

RP="$PACKWIRE receive-pack"
UP="$PACKWIRE upload-pack"

for algo in sha1 sha256; do
	C=$T/c-$algo S=$T/s-$algo.git
	make_repo "$C" "$algo"
	git init -q --bare --object-format="$algo" "$S"
	git -C "$C" push -q --receive-pack="$RP" "$S" main topic 2>/dev/null
	first=$(git -C "$C" rev-parse main~1)
	main=$(git -C "$C" rev-parse main)

	# ---- hideRefs ----------------------------------------------------------
	for n in one two three; do git -C "$S" update-ref refs/hidden/$n "$first"; done
	git -C "$S" config receive.hideRefs refs/hidden/
	$RP --advertise-refs "$S" >"$T/adv"
	check_fails "$algo: receive.hideRefs hides from the push advertisement" grep -qa refs/hidden "$T/adv"
	contains "$algo: other refs still advertised" "$T/adv" refs/heads/topic
	check_fails "$algo: push to a hidden ref fails" \
		git -C "$C" push --receive-pack="$RP" "$S" main:refs/hidden/one 2>"$T/err"
	contains "$algo: push to a hidden ref: reason" "$T/err" "deny updating a hidden ref"
	check_fails "$algo: delete of a hidden ref fails" \
		git -C "$C" push --receive-pack="$RP" "$S" :refs/hidden/two 2>"$T/err"
	contains "$algo: delete of a hidden ref: reason" "$T/err" "deny deleting a hidden ref"
	check "$algo: hidden refs unchanged" test "$(git -C "$S" rev-parse refs/hidden/one refs/hidden/two | sort -u)" = "$first"
	git -C "$S" config --unset receive.hideRefs
	git -C "$S" config transfer.hideRefs refs/hidden
	git -C "$S" config --add uploadpack.hideRefs '!refs/hidden/three'
	for v in 0 2; do
		git -c protocol.version=$v ls-remote --upload-pack="$UP" "$S" >"$T/ls"
		check "$algo v$v: transfer.hideRefs hides from upload-pack" test "$(grep -c refs/hidden/ "$T/ls")" = 1
		contains "$algo v$v: a later '!' un-hides" "$T/ls" refs/hidden/three
	done
	check_fails "$algo: transfer.hideRefs applies to pushes" \
		git -C "$C" push --receive-pack="$RP" "$S" main:refs/hidden/one 2>/dev/null
	git -C "$S" config --unset transfer.hideRefs
	git -C "$S" config --unset uploadpack.hideRefs

	# ---- deleting a ref that does not exist --------------------------------
	for h in pre-receive post-receive; do
		printf '#!/bin/sh\ncat >>%s.log\n' "$h" >"$S/hooks/$h"
		chmod +x "$S/hooks/$h"
	done
	printf '#!/bin/sh\necho "$@" >>post-update.log\n' >"$S/hooks/post-update"
	chmod +x "$S/hooks/post-update"
	git -C "$C" push -q --receive-pack="$RP" "$S" main:refs/heads/new :refs/heads/nonexistent 2>"$T/err"
	contains "$algo: pre-receive sees the missing delete" "$S/pre-receive.log" refs/heads/nonexistent
	check_fails "$algo: post-receive does not" grep -q nonexistent "$S/post-receive.log"
	check "$algo: post-update only gets the real update" test "$(cat "$S/post-update.log")" = refs/heads/new
	contains "$algo: the client is warned" "$T/err" "deleting a non-existent ref"
	rm -f "$S"/*.log
	git -C "$C" push -q --receive-pack="$RP" "$S" :refs/heads/nonexistent 2>/dev/null
	check "$algo: a missing delete alone runs no post hooks" test ! -e "$S/post-receive.log" -a ! -e "$S/post-update.log"
	rm -f "$S"/hooks/p* "$S"/*.log

	# ---- receive.autogc ----------------------------------------------------
	G=$T/gc-$algo.git
	cp -a "$S" "$G"
	git -C "$G" repack -q -a -d
	git -C "$C" commit -q --allow-empty -m "for a second pack"
	git -C "$G" config receive.unpackLimit 1
	git -C "$C" push -q "$G" main 2>/dev/null # stock git: a second pack
	git -C "$G" config gc.autoPackLimit 1
	git -C "$G" config gc.autoDetach false
	: >"$G/objects/tmp_test_object"
	touch -d '30 days ago' "$G/objects/tmp_test_object"
	git -C "$C" commit -q --allow-empty -m "gc trigger"
	git -C "$C" push -q --receive-pack="$RP" "$G" main 2>/dev/null
	check "$algo: receive.autogc ran git gc --auto" test ! -e "$G/objects/tmp_test_object"
	git -C "$G" config receive.autogc false
	: >"$G/objects/tmp_test_object"
	touch -d '30 days ago' "$G/objects/tmp_test_object"
	git -C "$C" commit -q --allow-empty -m "no gc"
	git -C "$C" push -q --receive-pack="$RP" "$G" main 2>/dev/null
	check "$algo: receive.autogc=false: no gc" test -e "$G/objects/tmp_test_object"

	# ---- .have from alternates ---------------------------------------------
	SH=$T/shared-$algo F=$T/fork-$algo
	git init -q --object-format="$algo" "$SH"
	git -C "$SH" commit -q --allow-empty -m both
	git clone -q -s "$SH" "$F"
	git -C "$SH" checkout -q -b only-shared
	git -C "$SH" commit -q --allow-empty -m only-shared
	git -C "$SH" update-ref refs/heads/foo HEAD
	local_oid=$(git -C "$F" rev-parse HEAD) shared=$(git -C "$SH" rev-parse only-shared)
	printf '%s refs/heads/main\n%s refs/remotes/origin/HEAD\n%s refs/remotes/origin/main\n%s .have\n' \
		"$local_oid" "$local_oid" "$local_oid" "$shared" >"$T/expect"
	$RP --advertise-refs "$F" >"$T/adv"
	tr '\0' '\n' <"$T/adv" | sed -n 's/^....\([0-9a-f]\{40,64\} [^ ]*\)$/\1/p' >"$T/got"
	same_file "$algo: .have once, never repeating our refs" "$T/expect" "$T/got"

	# ---- receive.fsck.* ----------------------------------------------------
	tree=$(git -C "$C" rev-parse "main^{tree}")
	bad=$(printf 'tree %s\nauthor no email 1700000000 +0000\ncommitter C <c@d.e> 1700000000 +0000\n\nbad\n' \
		"$tree" | git -C "$C" hash-object -t commit -w --literally --stdin)
	git -C "$C" update-ref refs/heads/bogus "$bad"
	D=$T/fsck-$algo.git
	git init -q --bare --object-format="$algo" "$D"
	git -C "$D" config receive.fsckObjects true
	check_fails "$algo: fsck refuses a bad ident" git -C "$C" push -q --receive-pack="$RP" "$D" bogus 2>"$T/err"
	contains "$algo: fsck names the message id" "$T/err" "missingEmail"
	git -C "$D" config fsck.missingEmail warn
	check_fails "$algo: receive.fsck.* does not fall back on fsck.*" \
		git -C "$C" push -q --receive-pack="$RP" "$D" bogus 2>/dev/null
	git -C "$D" config receive.fsck.whatEver error
	git -C "$D" config receive.fsck.missingEmail warn
	check "$algo: receive.fsck.missingEmail=warn accepts" \
		git -C "$C" push --receive-pack="$RP" "$D" bogus 2>"$T/err"
	contains "$algo: ... with a warning" "$T/err" "missingEmail"
	contains "$algo: unknown ids are skipped with a warning" "$T/err" "skipping unknown msg id 'whatever'"
	git -C "$D" update-ref -d refs/heads/bogus
	git -C "$D" config --add receive.fsck.missingEmail ignore
	git -C "$C" push --receive-pack="$RP" "$D" bogus >"$T/err" 2>&1
	check_fails "$algo: ignore: no word about it" grep -q missingEmail "$T/err"
	git -C "$D" update-ref -d refs/heads/bogus
	git -C "$D" config --unset-all receive.fsck.missingEmail
	git -C "$D" config --unset receive.fsck.whatEver
	git -C "$D" config receive.fsck.skipList does-not-exist
	check_fails "$algo: missing skipList fails" git -C "$C" push --receive-pack="$RP" "$D" bogus 2>"$T/err"
	contains "$algo: missing skipList: message" "$T/err" "could not open object name list: does-not-exist"
	git -C "$D" config receive.fsck.skipList config
	check_fails "$algo: bad skipList fails" git -C "$C" push --receive-pack="$RP" "$D" bogus 2>"$T/err"
	contains "$algo: bad skipList: message" "$T/err" "invalid object name: [core]"
	echo "$bad" >"$D/SKIP"
	git -C "$D" config receive.fsck.skipList SKIP
	check "$algo: skipList accepts the listed object" git -C "$C" push -q --receive-pack="$RP" "$D" bogus 2>/dev/null
	git -C "$D" config --unset receive.fsck.skipList
	git -C "$D" config receive.fsck.unterminatedheader warn
	check_fails "$algo: fatal ids cannot be demoted" git -C "$C" push --receive-pack="$RP" "$D" main 2>"$T/err"
	contains "$algo: Cannot demote" "$T/err" "Cannot demote unterminatedheader"
	git -C "$D" config --unset receive.fsck.unterminatedheader
	blob=$(echo blob | git -C "$C" hash-object -w --stdin)
	badtree=$(printf "123456 foo\0$(echo "$blob" | sed 's/../\\x&/g')" |
		git -C "$C" hash-object -t tree --stdin -w --literally)
	check "$algo: badFilemode is not a strict error" \
		git -C "$C" push --receive-pack="$RP" "$D" "$badtree:refs/tags/tree" 2>"$T/err"
	contains "$algo: badFilemode is reported" "$T/err" "$badtree: badFilemode"

	# ---- aliased refs ------------------------------------------------------
	A=$T/alias-$algo.git
	git init -q --bare --object-format="$algo" "$A"
	git -C "$C" push -q --receive-pack="$RP" "$A" "$first:refs/heads/foo" 2>/dev/null
	git -C "$A" symbolic-ref refs/heads/bar refs/heads/foo
	check "$algo: consistent update of a symref and its target" \
		git -C "$C" push -q --receive-pack="$RP" "$A" main:refs/heads/foo main:refs/heads/bar
	check "$algo: ... the target moved, the symref stays" \
		test "$(git -C "$A" rev-parse refs/heads/foo)" = "$(git -C "$C" rev-parse main)" -a "$(git -C "$A" symbolic-ref refs/heads/bar)" = refs/heads/foo
	check_fails "$algo: inconsistent aliased update refused" \
		git -C "$C" push --receive-pack="$RP" "$A" "+$first:refs/heads/foo" +topic:refs/heads/bar 2>"$T/err"
	contains "$algo: inconsistent aliased update: reason" "$T/err" "inconsistent aliased update"

	# ---- unpackLimit -------------------------------------------------------
	U=$T/unpack-$algo.git
	git init -q --bare --object-format="$algo" "$U"
	git -C "$C" push -q --receive-pack="$RP" "$U" "$first:refs/heads/small" 2>/dev/null
	check "$algo: a small push is unpacked into loose objects" test -z "$(ls "$U/objects/pack")"
	check "$algo: ... all of them" test "$(git -C "$U" count-objects | cut -d' ' -f1)" = "$(git -C "$C" rev-list --objects "$first" | wc -l)"
	check "$algo: ... fsck --strict" fsck_ok "$U"
	git -C "$U" config receive.unpackLimit 1
	git -C "$C" push -q --receive-pack="$RP" "$U" main:refs/heads/small 2>/dev/null
	check "$algo: receive.unpackLimit=1 keeps the pack" test -n "$(ls "$U/objects/pack")"
	git -C "$U" config transfer.unpackLimit 1000
	loose=$(git -C "$U" count-objects | cut -d' ' -f1)
	git -C "$C" push -q --receive-pack="$RP" "$U" topic:refs/heads/t2 v0.1 2>/dev/null
	check "$algo: transfer.unpackLimit wins over receive.unpackLimit" test "$(git -C "$U" count-objects | cut -d' ' -f1)" -gt "$loose"
	check "$algo: ... fsck --strict" fsck_ok "$U"
done
finish
