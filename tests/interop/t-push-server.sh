#!/bin/bash
# Stock `git push` into `packwire receive-pack` (via --receive-pack), over
# file:// and ssh (a fake ssh running the command locally), sha1 and sha256.
# Every push is made twice, into a packwire server and into a stock git
# server, from the same client state: git push's output must be the same
# (server path normalised), the refs identical, the packwire server must
# pass git fsck --strict, and the client's tracking refs must follow.
. "$(dirname "$0")/lib.sh"

use_fake_ssh

norm() { sed -e 's/srv-pw\.git/SRV/g' -e 's/srv-git\.git/SRV/g' "$1"; }

# push_both WHAT ARGS...: git push ARGS to remote "pw" and to remote "git"
push_both() {
	local what=$1 rc_pw=0 rc_git=0
	shift
	git -C "$C" push pw "$@" >"$T/out-pw" 2>&1 || rc_pw=$?
	git -C "$C" push git "$@" >"$T/out-git" 2>&1 || rc_git=$?
	if [ "$rc_pw" = "$rc_git" ]; then ok "$what: same exit status ($rc_pw)"; else
		not_ok "$what: exit $rc_pw vs git's $rc_git"
		sed 's/^/    pw: /' "$T/out-pw"
		sed 's/^/    git: /' "$T/out-git"
	fi
	if diff <(norm "$T/out-pw") <(norm "$T/out-git") >"$T/diff"; then
		ok "$what: same output as with git receive-pack"
	else
		not_ok "$what: output differs"
		head -20 "$T/diff"
	fi
	if same_refs "$SP" "$SG"; then ok "$what: same refs"; else
		not_ok "$what: refs differ"
		diff <(refs "$SP") <(refs "$SG") | head || true
	fi
	check "$what: fsck --strict" fsck_ok "$SP"
	if diff <(git -C "$C" for-each-ref --format='%(objectname) %(refname:lstrip=3)' refs/remotes/pw) \
		<(git -C "$C" for-each-ref --format='%(objectname) %(refname:lstrip=3)' refs/remotes/git) >/dev/null; then
		ok "$what: tracking refs"
	else
		not_ok "$what: tracking refs differ"
	fi
}

for algo in sha1 sha256; do
	for transport in file ssh; do
		D=$T/$algo-$transport
		mkdir -p "$D"
		C=$D/client SP=$D/srv-pw.git SG=$D/srv-git.git
		make_repo "$C" "$algo" 2>/dev/null
		git init -q --bare --object-format="$algo" "$SP"
		git init -q --bare --object-format="$algo" "$SG"
		for s in "$SP" "$SG"; do
			git -C "$s" config receive.advertisePushOptions true
			mkdir -p "$s/hooks"
			cat >"$s/hooks/pre-receive" <<'EOF'
#!/bin/sh
{ echo "count=$GIT_PUSH_OPTION_COUNT"
  i=0; while [ "$i" -lt "${GIT_PUSH_OPTION_COUNT:-0}" ]; do eval "echo \"opt=\$GIT_PUSH_OPTION_$i\""; i=$((i+1)); done
  cat
  [ -n "$GIT_QUARANTINE_PATH" ] && echo quarantined
} >>hook.log
if grep -q refs/heads/deny-me hook.log; then echo "pre-receive says no"; exit 1; fi
exit 0
EOF
			cat >"$s/hooks/update" <<'EOF'
#!/bin/sh
echo "update $1" >&2
[ "$1" = refs/heads/bad ] && { echo "bad is not welcome"; exit 1; }
exit 0
EOF
			cat >"$s/hooks/post-receive" <<'EOF'
#!/bin/sh
echo "post-receive got $(wc -l) lines"
EOF
			chmod +x "$s/hooks/pre-receive" "$s/hooks/update" "$s/hooks/post-receive"
		done
		if [ $transport = file ]; then
			git -C "$C" remote add pw "file://$SP"
			git -C "$C" remote add git "file://$SG"
		else
			git -C "$C" remote add pw "ssh://localhost$SP"
			git -C "$C" remote add git "ssh://localhost$SG"
		fi
		git -C "$C" config remote.pw.receivepack "$PACKWIRE receive-pack"
		p="$algo/$transport"

		push_both "$p create" main topic v0.1 v0.2 v0.2-annotated
		git -C "$C" commit -q --allow-empty -m "ff"
		push_both "$p fast-forward" main
		git -C "$C" reset -q --hard HEAD~2
		echo forced >"$C/forced.txt" && git -C "$C" add forced.txt && git -C "$C" commit -q -m forced
		push_both "$p non-ff refused" main
		push_both "$p forced non-ff" --force main
		push_both "$p delete" :topic :v0.1
		push_both "$p atomic with one refused ref" --atomic main:refs/heads/ok2 main:refs/heads/bad
		push_both "$p update hook refuses one ref" main:refs/heads/ok3 main:refs/heads/bad
		rm -f "$SP/hook.log" "$SG/hook.log"
		push_both "$p push options" -o "first=1" -o "second two" main:refs/heads/opts
		same_file "$p: pre-receive saw the same options, input and quarantine" "$SP/hook.log" "$SG/hook.log"
		contains "$p: options reached the hook" "$SP/hook.log" "opt=second two"
		push_both "$p pre-receive declines" main:refs/heads/deny-me
		push_both "$p nothing to push" main
		push_both "$p tags" --tags
	done
done

# A non-bare server refuses to update its checked-out branch by default.
for algo in sha1 sha256; do
	D=$T/nonbare-$algo
	make_repo "$D/client" "$algo" 2>/dev/null
	git clone -q "$D/client" "$D/work"
	git -C "$D/client" commit -q --allow-empty -m more
	before=$(refs "$D/work")
	if git -C "$D/client" push --receive-pack="$PACKWIRE receive-pack" "$D/work" main >"$T/out" 2>&1; then
		not_ok "$algo: push to the checked-out branch succeeded"
	else
		contains "$algo: checked-out branch refused" "$T/out" "[remote rejected] main -> main (branch is currently checked out)"
	fi
	[ "$before" = "$(refs "$D/work")" ] && ok "$algo: non-bare refs unchanged" || not_ok "$algo: non-bare refs changed"
done

finish
