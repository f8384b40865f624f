#!/bin/bash
# packwire receive-pack and work trees / reflogs, against stock git push,
# SHA-1 and SHA-256, for what Git's t5516 checks:
# receive.denyCurrentBranch=updateInstead (clean work tree updated, dirty
# work tree or index refused, push into an unborn branch), the
# push-to-checkout hook, branches checked out in linked work trees (also
# of a bare repository: refused, updateInstead, no delete), and
# core.logAllRefUpdates in a bare repository ("push" reflog entries, the log
# removed with the ref).
. "$(dirname "$0")/lib.sh"

RP="$PACKWIRE receive-pack"
push() { git -C "$C" push -q --receive-pack="$RP" "$@"; }

for algo in sha1 sha256; do
	C=$T/c-$algo W=$T/w-$algo
	make_repo "$C" "$algo"
	git -C "$C" checkout -q main

	# ---- updateInstead, main work tree ------------------------------------
	git init -q --object-format="$algo" "$W"
	git -C "$W" config receive.denyCurrentBranch updateInstead
	check "$algo: updateInstead: push into an unborn branch" push "$W" main 2>/dev/null
	check "$algo: ... work tree checked out" test "$(cat "$W/a.txt")" = "$(cat "$C/a.txt")"
	check "$algo: ... clean" test -z "$(git -C "$W" status --porcelain)"
	echo more >>"$C/a.txt"
	git -C "$C" commit -q -am more
	check "$algo: updateInstead: clean work tree follows the push" push "$W" main 2>/dev/null
	check "$algo: ... file updated, still clean" test "$(cat "$W/a.txt")" = "$(cat "$C/a.txt")" -a -z "$(git -C "$W" status --porcelain)"
	echo dirty >"$W/big.txt"
	echo again >>"$C/a.txt"
	git -C "$C" commit -q -am again
	check_fails "$algo: updateInstead: dirty work tree refused" push "$W" main 2>"$T/err"
	contains "$algo: ... reason" "$T/err" "Working directory has unstaged changes"
	check "$algo: ... nothing changed" test "$(cat "$W/big.txt")" = dirty -a "$(git -C "$W" rev-parse HEAD)" = "$(git -C "$C" rev-parse main~1)"
	git -C "$W" add big.txt
	check_fails "$algo: updateInstead: dirty index refused" push "$W" main 2>"$T/err"
	contains "$algo: ... reason" "$T/err" "Working directory has staged changes"
	git -C "$W" reset -q --hard

	# ---- push-to-checkout hook --------------------------------------------
	printf '#!/bin/sh\necho "to $1" >>../ptc.log\ngit read-tree -u -m HEAD "$1"\n' >"$W/.git/hooks/push-to-checkout"
	chmod +x "$W/.git/hooks/push-to-checkout"
	check "$algo: push-to-checkout hook runs instead" push "$W" main 2>/dev/null
	contains "$algo: ... with the new commit" "$W/ptc.log" "to $(git -C "$C" rev-parse main)"
	check "$algo: ... and updated the work tree" test "$(cat "$W/a.txt")" = "$(cat "$C/a.txt")"
	printf '#!/bin/sh\nexit 1\n' >"$W/.git/hooks/push-to-checkout"
	git -C "$C" commit -q --allow-empty -m declined
	check_fails "$algo: push-to-checkout hook declines" push "$W" main 2>"$T/err"
	contains "$algo: ... reason" "$T/err" "push-to-checkout hook declined"
	rm -f "$W/.git/hooks/push-to-checkout" "$W/ptc.log"

	# ---- linked work trees -------------------------------------------------
	git -C "$W" worktree add -q "$T/lw-$algo" -b side
	git -C "$W" config receive.denyCurrentBranch refuse
	check_fails "$algo: branch of a linked work tree refused" push "$W" main:side 2>/dev/null
	git -C "$W" config receive.denyCurrentBranch updateInstead
	check "$algo: updateInstead updates the linked work tree" push "$W" main:side 2>/dev/null
	check "$algo: ... its files" test "$(cat "$T/lw-$algo/a.txt")" = "$(cat "$C/a.txt")"
	check_fails "$algo: its branch cannot be deleted" push "$W" :side 2>/dev/null
	B=$T/bare-$algo.git
	git clone -q --bare "$C" "$B"
	git -C "$B" worktree add -q wt topic 2>/dev/null
	git -C "$B" config receive.denyCurrentBranch refuse
	check_fails "$algo: bare repository's work tree branch refused" push "$B" main:topic 2>/dev/null
	git -C "$B" config receive.denyCurrentBranch updateInstead
	check "$algo: ... updateInstead" push -f "$B" main:topic 2>/dev/null
	check "$algo: ... its files" test "$(cat "$B/wt/a.txt")" = "$(cat "$C/a.txt")"
	check_fails "$algo: ... no delete" push "$B" :topic 2>/dev/null

	# ---- core.logAllRefUpdates in a bare repository ------------------------
	L=$T/log-$algo.git
	git init -q --bare --object-format="$algo" "$L"
	push "$L" main:one 2>/dev/null
	check "$algo: bare, unset: no reflog" test ! -e "$L/logs/refs/heads/one"
	git -C "$L" config core.logAllRefUpdates true
	push "$L" main:two 2>/dev/null
	check "$algo: logAllRefUpdates: push logged" test "$(git -C "$L" log -g --format='%gd %gs' two)" = "two@{0} push"
	push "$L" main~1:refs/heads/three 2>/dev/null
	push "$L" main:three 2>/dev/null
	check "$algo: ... each update" test "$(git -C "$L" log -g --format='%gs' three | wc -l)" = 2
	push "$L" :two 2>/dev/null
	check "$algo: ... the log goes with the ref" test ! -e "$L/logs/refs/heads/two"
	git -C "$L" config core.logAllRefUpdates false
	push -f "$L" main~1:refs/heads/three 2>/dev/null
	check "$algo: an existing log is still appended" test "$(git -C "$L" log -g --format='%gs' three | wc -l)" = 3
done
finish
