#!/usr/bin/env bash
# packwire fetch against stock git upload-pack (v0, v1, v2; file:// and
# ssh; SHA-1 and SHA-256): new commits, a force-pushed branch, new and
# deleted branches, tags; the refs, FETCH_HEAD and summary lines match what
# git fetch does in a twin clone; non-fast-forward updates are refused
# without '+'; --prune; negative refspecs; a shallow clone deepened.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/client-lib.sh"

cd "$T"
for algo in sha1 sha256; do
	make_repo "base-$algo" "$algo" >/dev/null 2>&1
done

# server-side history changes between fetches
evolve() {
	(
		cd "$1"
		echo more >>a.txt && git commit -q -am "more on main"
		git checkout -q topic && git commit -q --amend -m "topic rewritten" && git checkout -q main
		git branch -q feature HEAD~1
		git tag -a v1.0 -m "release" HEAD
		git tag light HEAD~1
	)
}
evolve2() {
	(
		cd "$1"
		git branch -q -D feature
		echo again >>big.txt && git commit -q -am "again"
	)
}

n=0
for algo in sha1 sha256; do
	for tr in file ssh; do
		for v in 0 1 2; do
			n=$((n + 1))
			d="$algo-$tr-v$v"
			rm -rf srv && cp -r "base-$algo" srv
			u=$(url $tr "$T/srv")
			pw $v clone -q "$u" "pw-$n"
			g $v clone -q "$u" "git-$n" 2>/dev/null
			evolve srv
			(cd "pw-$n" && pw $v fetch) 2>pw.err || not_ok "$d: fetch exit status"
			(cd "git-$n" && g $v fetch) 2>git.err
			check "$d fetch: refs as git fetch" same_refs "pw-$n" "git-$n"
			same_file "$d fetch: FETCH_HEAD as git" "pw-$n/.git/FETCH_HEAD" "git-$n/.git/FETCH_HEAD"
			same_file "$d fetch: summary as git" pw.err git.err
			check "$d fetch: fsck" fsck_ok "pw-$n"
			evolve2 srv
			(cd "pw-$n" && pw $v fetch --prune) 2>pw.err
			(cd "git-$n" && g $v fetch --prune) 2>git.err
			check "$d fetch --prune: refs as git" same_refs "pw-$n" "git-$n"
			same_file "$d fetch --prune: summary as git" pw.err git.err
			check "$d fetch --prune: fsck" fsck_ok "pw-$n"
			(cd "pw-$n" && pw $v fetch) 2>pw.err
			check "$d: nothing new, nothing said" test ! -s pw.err
		done
	done
done

# non-fast-forward without '+' is refused, the ref stays
rm -rf srv && cp -r base-sha256 srv
pw 2 clone -q srv pw-nff
git clone -q srv git-nff
(cd srv && git checkout -q topic && git commit -q --amend -m again && git checkout -q main)
before=$(git -C pw-nff rev-parse refs/remotes/origin/topic)
(cd pw-nff && pw 2 fetch origin refs/heads/topic:refs/remotes/origin/topic) 2>pw.err && rc=0 || rc=$?
(cd git-nff && git fetch origin refs/heads/topic:refs/remotes/origin/topic) 2>git.err || true
check "non-ff: exit status 1" test "$rc" = 1
contains "non-ff: rejected line" pw.err "! [rejected]        topic      -> origin/topic  (non-fast-forward)"
check "non-ff: ref unchanged" test "$(git -C pw-nff rev-parse refs/remotes/origin/topic)" = "$before"
(cd pw-nff && pw 2 fetch origin +refs/heads/topic:refs/remotes/origin/topic) 2>pw.err
(cd git-nff && git fetch origin +refs/heads/topic:refs/remotes/origin/topic) 2>git.err
check "forced with +: refs as git" same_refs pw-nff git-nff
same_file "forced with +: summary as git" pw.err git.err

# negative refspecs and glob refspecs on the command line
(cd srv && git branch -q keep && git branch -q skip)
(cd pw-nff && pw 2 fetch origin 'refs/heads/*:refs/x/*' '^refs/heads/skip') 2>/dev/null
check "glob refspec maps" git -C pw-nff rev-parse -q --verify refs/x/keep >/dev/null
check "negative refspec excludes" test -z "$(git -C pw-nff for-each-ref refs/x/skip)"

# URL + branch name: FETCH_HEAD only
(cd pw-nff && pw 2 fetch "$T/srv" main) 2>pw.err
(cd git-nff && git fetch "$T/srv" main) 2>git.err
same_file "URL + branch: FETCH_HEAD as git" pw-nff/.git/FETCH_HEAD git-nff/.git/FETCH_HEAD
same_file "URL + branch: summary as git" pw.err git.err

# shallow clone, then fetch new commits and deepen
for v in 0 2; do
	rm -rf srv && cp -r base-sha1 srv
	pw $v clone -q --depth=1 "file://$T/srv" pw-sh-$v
	g $v clone -q --depth=1 "file://$T/srv" git-sh-$v
	(cd srv && echo new >>a.txt && git commit -q -am new)
	(cd pw-sh-$v && pw $v fetch) 2>/dev/null
	(cd git-sh-$v && g $v fetch) 2>/dev/null
	check "shallow v$v fetch: refs as git" same_refs pw-sh-$v git-sh-$v
	check "shallow v$v fetch: shallow as git" cmp -s pw-sh-$v/.git/shallow git-sh-$v/.git/shallow
	check "shallow v$v fetch: fsck" fsck_ok pw-sh-$v
	(cd pw-sh-$v && pw $v fetch --depth=3) 2>/dev/null
	(cd git-sh-$v && g $v fetch --depth=3) 2>/dev/null
	check "shallow v$v deepen: shallow as git" cmp -s pw-sh-$v/.git/shallow git-sh-$v/.git/shallow
	check "shallow v$v deepen: fsck" fsck_ok pw-sh-$v
done
finish
