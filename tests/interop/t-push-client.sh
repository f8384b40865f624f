#!/bin/bash
# `packwire push` against stock `git push`: two identical clients push the
# same refspecs, one with packwire, one with git, into twin servers (stock
# git receive-pack, or packwire receive-pack), over file:// and ssh, sha1
# and sha256. The printed summary must match git's (hint paragraphs aside),
# the servers' refs must be identical and pass git fsck --strict, and the
# clients' remote-tracking refs must match. Then the object-format rule:
# a repository of one algorithm pushing to a server of the other fails with
# git's message before anything is sent, also when the server is empty.
. "$(dirname "$0")/lib.sh"

use_fake_ssh

norm() { sed -e 's/srv-[ab]\.git/SRV/g' -e '/^hint:/d' "$1"; }

# push_both WHAT ARGS...: packwire push in client A, git push in client B
push_both() {
	local what=$1 rc_a=0 rc_b=0
	shift
	(cd "$CA" && "$PACKWIRE" push "$@") >"$T/out-a" 2>&1 || rc_a=$?
	(cd "$CB" && git push "$@") >"$T/out-b" 2>&1 || rc_b=$?
	if [ "$rc_a" = "$rc_b" ]; then ok "$what: exit status $rc_a"; else
		not_ok "$what: exit $rc_a vs git push's $rc_b"
		sed 's/^/    packwire: /' "$T/out-a"
		sed 's/^/    git: /' "$T/out-b"
	fi
	if diff <(norm "$T/out-a") <(norm "$T/out-b") >"$T/diff"; then ok "$what: same output"; else
		not_ok "$what: output differs from git push"
		head -20 "$T/diff"
	fi
	if same_refs "$SA" "$SB"; then ok "$what: same server refs"; else
		not_ok "$what: server refs differ"
		diff <(refs "$SA") <(refs "$SB") | head || true
	fi
	check "$what: server fsck --strict" fsck_ok "$SA"
	if [ "$(git -C "$CA" for-each-ref refs/remotes)" = "$(git -C "$CB" for-each-ref refs/remotes)" ]; then
		ok "$what: same tracking refs"
	else
		not_ok "$what: tracking refs differ"
		diff <(git -C "$CA" for-each-ref refs/remotes) <(git -C "$CB" for-each-ref refs/remotes) | head || true
	fi
}

# in_both CMD...: run a git command in both clients
in_both() { git -C "$CA" "$@" && git -C "$CB" "$@"; }

# ---- real history, packwire into packwire: interop/t-push-client/real ----
if real_part "push of git v1.5.0"; then
	for algo in sha1 sha256; do
		SRC=$(data_repo small "$algo")
		D=$T/data-$algo
		git clone -q --bare "$SRC" "$D/client.git" 2>/dev/null
		git init -q --bare --object-format="$algo" "$D/srv.git"
		if (cd "$D/client.git" && "$PACKWIRE" push --receive-pack="$PACKWIRE receive-pack" "$D/srv.git" --all) >"$T/out" 2>&1; then
			ok "$algo: real history pushed packwire to packwire"
		else
			not_ok "$algo: real history push failed"
			head "$T/out"
		fi
		check "$algo: real history fsck" fsck_ok "$D/srv.git"
		if [ "$(git -C "$D/srv.git" for-each-ref refs/heads)" = "$(git -C "$D/client.git" for-each-ref refs/heads)" ]; then
			ok "$algo: real history refs"
		else not_ok "$algo: real history refs differ"; fi
	done
	finish
fi

for algo in sha1 sha256; do
	for server in git packwire; do
		for transport in file ssh; do
			D=$T/$algo-$server-$transport
			mkdir -p "$D"
			CA=$D/client-a CB=$D/client-b SA=$D/srv-a.git SB=$D/srv-b.git
			make_repo "$CA" "$algo" 2>/dev/null
			git init -q --bare --object-format="$algo" "$SA"
			git init -q --bare --object-format="$algo" "$SB"
			for s in "$SA" "$SB"; do
				git -C "$s" config receive.advertisePushOptions true
				printf '#!/bin/sh\n[ "$1" = refs/heads/bad ] && { echo "no bad refs"; exit 1; }\nexit 0\n' >"$s/hooks/update"
				printf '#!/bin/sh\necho "options: $GIT_PUSH_OPTION_COUNT ${GIT_PUSH_OPTION_0:-}"\n' >"$s/hooks/pre-receive"
				chmod +x "$s/hooks/update" "$s/hooks/pre-receive"
			done
			cp -a "$CA" "$CB"
			if [ $transport = file ]; then
				git -C "$CA" remote add origin "file://$SA"
				git -C "$CB" remote add origin "file://$SB"
			else
				git -C "$CA" remote add origin "ssh://localhost$SA"
				git -C "$CB" remote add origin "ssh://localhost$SB"
			fi
			if [ $server = packwire ]; then
				in_both config remote.origin.receivepack "$PACKWIRE receive-pack"
			fi
			p="$algo/$server/$transport"

			push_both "$p create" origin main topic v0.1 v0.2-annotated
			push_both "$p nothing new" origin main
			in_both commit -q --allow-empty -m ff --date=1700000100
			in_both branch -q --set-upstream-to=origin/main main
			push_both "$p fast-forward (push.default)"
			in_both reset -q --hard HEAD~2
			in_both commit -q --allow-empty -m diverged --date=1700000200
			push_both "$p non-fast-forward refused" origin main
			push_both "$p forced" --force origin main
			push_both "$p delete" origin :topic
			push_both "$p --delete" --delete origin v0.1
			push_both "$p --tags" --tags origin
			push_both "$p existing tag refused" origin main:refs/tags/v0.2-annotated
			push_both "$p atomic with a refused ref" --atomic origin main:refs/heads/ok main:refs/heads/bad
			push_both "$p hook refuses one ref" origin main:refs/heads/ok main:refs/heads/bad
			push_both "$p push option" --push-option=hello origin HEAD:refs/heads/opt
			push_both "$p dry run" --dry-run origin main:refs/heads/dry
			in_both branch -q extra HEAD~1
			push_both "$p --all" --all origin
			push_both "$p --mirror" --mirror origin
		done
	done
done


# object format: the server must support our algorithm
for algo in sha1 sha256; do
	o=$([ $algo = sha1 ] && echo sha256 || echo sha1)
	D=$T/format-$algo
	make_repo "$D/client" "$algo" 2>/dev/null
	make_repo "$D/other" "$o" 2>/dev/null
	git init -q --bare --object-format="$o" "$D/empty.git"
	git init -q --bare --object-format="$o" "$D/full.git"
	git -C "$D/other" push -q "$D/full.git" main
	for server in git packwire; do
		rp=git-receive-pack
		[ $server = packwire ] && rp="$PACKWIRE receive-pack"
		for target in empty full; do
			before=$(cd "$D/$target.git" && find objects refs -type f | sort && git for-each-ref)
			if (cd "$D/client" && "$PACKWIRE" push --receive-pack="$rp" "$D/$target.git" main) >"$T/out" 2>&1; then
				not_ok "$algo into $o $target ($server): push succeeded"
			else
				contains "$algo into $o $target ($server): refused" "$T/out" \
					"fatal: the receiving end does not support this repository's hash algorithm"
			fi
			after=$(cd "$D/$target.git" && find objects refs -type f | sort && git for-each-ref)
			[ "$before" = "$after" ] && ok "$algo into $o $target ($server): server unchanged" ||
				not_ok "$algo into $o $target ($server): server changed"
		done
	done
done

finish
