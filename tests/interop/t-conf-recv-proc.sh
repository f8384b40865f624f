#!/bin/bash
# Stock git pushes to packwire receive-pack with a proc-receive hook
# (receive.procReceiveRefs, what Git's t5411 checks), SHA-1 and SHA-256:
# refs rewritten by the hook and reported through report-status-v2, "ng"
# from the hook, push options and the capabilities offered to it, a
# handed-back ("fall-through") command, what pre-receive and post-receive
# see, --atomic, the a/d/m/! modifiers, and hooks that fail, lie or say
# nothing, with Git's messages.
. "$(dirname "$0")/lib.sh"

RP="$PACKWIRE receive-pack"
HOOK=$PW_SRC/tests/interop/proc-receive-hook.py

if ! command -v python3 >/dev/null; then
	skip "python3 is needed for the proc-receive hook"
	finish
fi

for algo in sha1 sha256; do
	C=$T/c-$algo S=$T/s-$algo.git
	make_repo "$C" "$algo"
	git init -q --bare --object-format="$algo" "$S"
	git -C "$C" push -q --receive-pack="$RP" "$S" main~1:refs/heads/main 2>/dev/null
	main=$(git -C "$C" rev-parse main)
	old=$(git -C "$C" rev-parse main~1)
	git -C "$S" config receive.procReceiveRefs refs/for
	git -C "$S" config receive.advertisePushOptions true
	cp "$HOOK" "$S/hooks/proc-receive"
	for h in pre-receive post-receive; do
		printf '#!/bin/sh\ncat >>%s.log\n' "$h" >"$S/hooks/$h"
		chmod +x "$S/hooks/$h"
	done
	echo rewrite >"$S/proc-mode"
	push() { git -C "$C" push --receive-pack="$RP" "$@"; }

	# ---- rewrite, ng, fall-through, push options --------------------------
	rc=0
	push --porcelain -o reviewer=alice "$S" main HEAD:refs/for/main/topic \
		HEAD:refs/for/x/bad HEAD:refs/for/y/fall >"$T/out" 2>"$T/err" || rc=$?
	check "$algo: a push with an ng from the hook fails" test "$rc" -ne 0
	check "$algo: the ordinary ref was updated" test "$(git -C "$S" rev-parse refs/heads/main)" = "$main"
	check "$algo: the hook's ref was created" test "$(git -C "$S" rev-parse refs/changes/1)" = "$main"
	check_fails "$algo: the pushed refs/for ref was not" git -C "$S" rev-parse -q --verify refs/for/main/topic
	check "$algo: fall-through: receive-pack created the ref" \
		test "$(git -C "$S" rev-parse refs/for/y/fall)" = "$main"
	check_fails "$algo: the refused ref does not exist" git -C "$S" rev-parse -q --verify refs/for/x/bad
	contains "$algo: report-status-v2 names the rewritten ref" "$T/out" "refs/changes/1"
	contains "$algo: the hook's ng reason reaches the client" "$T/out" "rejected by review"
	contains "$algo: the hook's stderr reaches the client" "$T/err" "remote: proc-receive: 3 command(s)"
	contains "$algo: the hook got push-options offered" "$S/proc.log" "version: version=1 | push-options"
	contains "$algo: the hook got the push option" "$S/proc.log" "option: reviewer=alice"
	contains "$algo: the hook got its command" "$S/proc.log" "refs/for/main/topic"
	check_fails "$algo: ... and not the ordinary one" grep -q "cmd: .* refs/heads/main" "$S/proc.log"
	contains "$algo: pre-receive sees the pushed name" "$S/pre-receive.log" " refs/for/main/topic"
	contains "$algo: post-receive sees the rewritten name" "$S/post-receive.log" "$main refs/changes/1"
	check_fails "$algo: post-receive does not see the pushed name" \
		grep -q "refs/for/main/topic" "$S/post-receive.log"
	contains "$algo: post-receive sees the fall-through ref" "$S/post-receive.log" " refs/for/y/fall"
	check "$algo: fsck of the server" fsck_ok "$S"
	rm -f "$S"/*.log

	# ---- atomic ------------------------------------------------------------
	git -C "$S" update-ref refs/heads/main "$old"
	rc=0
	push --atomic "$S" main HEAD:refs/for/z/bad >"$T/out" 2>&1 || rc=$?
	check "$algo: atomic push with an ng fails" test "$rc" -ne 0
	check "$algo: atomic: the ordinary ref did not move" test "$(git -C "$S" rev-parse refs/heads/main)" = "$old"
	contains "$algo: atomic: the ordinary ref fails with the hook" "$T/out" "fail to run proc-receive hook"
	contains "$algo: atomic: the hook was offered atomic" "$S/proc.log" "version: version=1 | atomic"

	# ---- hooks that fail, lie or stay silent --------------------------------
	for mode in die lie silent; do
		echo $mode >"$S/proc-mode"
		rc=0
		push "$S" HEAD:refs/for/main/$mode >"$T/out-$mode" 2>&1 || rc=$?
		check "$algo: hook '$mode': the push fails" test "$rc" -ne 0
		check_fails "$algo: hook '$mode': no ref created" git -C "$S" rev-parse -q --verify refs/for/main/$mode
	done
	contains "$algo: dying hook: its words" "$T/out-die" "remote: proc-receive: giving up"
	contains "$algo: dying hook: Git's error" "$T/out-die" "error: fail to negotiate version with proc-receive hook"
	contains "$algo: dying hook: the reason" "$T/out-die" "(fail to run proc-receive hook)"
	contains "$algo: lying hook: Git's error" "$T/out-lie" \
		"error: proc-receive reported status on unknown ref: refs/heads/never-pushed"
	contains "$algo: lying hook: the reason" "$T/out-lie" "(proc-receive failed to report status)"
	contains "$algo: silent hook: the reason" "$T/out-silent" "(proc-receive failed to report status)"
	mv "$S/hooks/proc-receive" "$S/proc-receive.off"
	rc=0
	push "$S" HEAD:refs/for/main/nohook >"$T/out" 2>&1 || rc=$?
	check "$algo: no hook: the push fails" test "$rc" -ne 0
	contains "$algo: no hook: Git's error" "$T/out" "error: cannot find hook 'proc-receive'"
	mv "$S/proc-receive.off" "$S/hooks/proc-receive"

	# ---- modifiers ---------------------------------------------------------
	echo rewrite >"$S/proc-mode"
	git -C "$S" config receive.procReceiveRefs m:refs/heads
	git -C "$S" update-ref -d refs/changes/1
	push -q "$S" main HEAD:refs/heads/brand-new 2>/dev/null
	check "$algo: 'm:': a modify goes to the hook" test "$(git -C "$S" rev-parse refs/changes/1)" = "$main"
	check "$algo: 'm:': ... and the branch does not move" test "$(git -C "$S" rev-parse refs/heads/main)" = "$old"
	check "$algo: 'm:': a create does not go to the hook" \
		test "$(git -C "$S" rev-parse refs/heads/brand-new)" = "$main"
	git -C "$S" config receive.procReceiveRefs 'a!:refs/heads'
	git -C "$S" update-ref -d refs/changes/1
	push -q "$S" HEAD:refs/tags/elsewhere HEAD:refs/heads/other 2>/dev/null
	check "$algo: 'a!:': a new ref outside the prefix goes to the hook" \
		test "$(git -C "$S" rev-parse refs/changes/1)" = "$main"
	check_fails "$algo: 'a!:': ... and is not created" git -C "$S" rev-parse -q --verify refs/tags/elsewhere
	check "$algo: 'a!:': a new ref under it is created" test "$(git -C "$S" rev-parse refs/heads/other)" = "$main"

	# ---- packwire's own push reads report-status-v2 -------------------------
	git -C "$S" config receive.procReceiveRefs refs/for
	rc=0
	(cd "$C" && "$PACKWIRE" push --receive-pack="$RP" "$S" HEAD:refs/for/main/mine) >"$T/out" 2>&1 || rc=$?
	check "$algo: packwire push through the hook succeeds" test "$rc" -eq 0
	check "$algo: packwire push: the hook's ref exists" test "$(git -C "$S" rev-parse refs/changes/1)" = "$main"
done
finish
