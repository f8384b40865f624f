#!/usr/bin/env bash
# The pre-push hook in packwire push, beside git push in the same
# situation: one hook script records its arguments and stdin; the same
# pushes (a fast-forward, a new branch, a delete, a force push, a tag that
# already exists, a non-fast-forward, nothing to do, a dry run, HEAD, an
# id and a revision as sources, several refs, a URL instead of a remote
# name) to twin remotes (a path, file:// and ssh) leave equal records, the
# same stderr and exit codes, and equal remotes. A hook that exits 1 stops
# the push with git's message and leaves the remote as it was; --no-verify
# skips it; core.hooksPath is honoured; a hook that reads none of a long
# input does not break the push. SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"
use_fake_ssh

# setup K ALGO: $T/K/{remote.git,work} with the hook recording into $T/K/rec
setup() {
	local k=$1 algo=$2 R=$T/$1
	rm -rf "$R"
	mkdir -p "$R"
	git init -q --bare --object-format="$algo" "$R/remote.git"
	git init -q --object-format="$algo" "$R/work"
	(
		cd "$R/work"
		echo a >a
		git add a
		git commit -q -m one
		git push -q ../remote.git main main:old main:gone main:gone2
		git tag t1
		git push -q ../remote.git t1
		mkdir -p .git/hooks
		cat >.git/hooks/pre-push <<-EOF
			#!/bin/sh
			echo "argv: \$*" >>"$R/rec"
			cat >>"$R/rec"
			echo "--" >>"$R/rec"
			echo "hook stdout"
			echo "hook stderr" >&2
			exit \${PP_EXIT:-0}
		EOF
		chmod +x .git/hooks/pre-push
	)
	: >"$R/rec"
}

# P K ARGS...: push with git (K=git) or packwire (K=pw) from $T/K/work
P() {
	local k=$1
	shift
	if [ "$k" = git ]; then
		(cd "$T/$k/work" && git push "$@")
	else
		(cd "$T/$k/work" && "$PACKWIRE" push "$@")
	fi
}

# scenario K URL: the pushes, each step's stderr (hints left out: packwire
# does not print them) and exit code appended to $T/K/out
scenario() {
	local k=$1 url=$2 R=$T/$1 rc
	step() {
		local what=$1 rc
		shift
		P "$k" "$@" >"$R/step.out" 2>&1 && rc=0 || rc=$?
		{
			echo "== $what: $rc"
			grep -v '^hint:' "$R/step.out" | sed "s|$T/$k/|ROOT/|g"
		} >>"$R/out"
	}
	git -C "$R/work" remote add origin "$url"
	echo b >>"$R/work/a"
	git -C "$R/work" commit -q -am two
	step "fast-forward" origin main
	step "up to date" origin main
	step "dry run" --dry-run origin main:new
	PP_EXIT=1 step "hook refuses" origin main:new :gone
	refs "$R/remote.git" >"$R/after-refused"
	step "new branch and a delete" origin main:new :gone
	step "a URL, no remote name" "$url" HEAD~1:old HEAD:refs/heads/h1
	git -C "$R/work" tag -f t1 HEAD >/dev/null
	step "existing tag" origin t1
	step "an id" origin "$(git -C "$R/work" rev-parse HEAD):refs/heads/byid"
	step "a revision" origin main~1:refs/heads/rel
	step "two refs" origin main:m2 main:m3
	step "delete with --delete" --delete origin gone2
	git -C "$R/work" reset -q --hard HEAD~1
	echo c >>"$R/work/a"
	git -C "$R/work" commit -q -am three
	step "non-fast-forward" origin main
	step "force push" origin +main
	step "--no-verify" --no-verify origin main:nv
	git -C "$R/work" config core.hooksPath "$R/other-hooks"
	mkdir -p "$R/other-hooks"
	printf '#!/bin/sh\necho "other: $*" >>"%s"\ncat >>"%s"\n' "$R/rec" "$R/rec" \
		>"$R/other-hooks/pre-push"
	chmod +x "$R/other-hooks/pre-push"
	step "core.hooksPath" origin main:hp
	git -C "$R/work" config --unset core.hooksPath
}

for algo in sha1 sha256; do
	for tr in path file ssh; do
		w="$algo $tr"
		for k in git pw; do
			setup $k $algo
			case $tr in
			path) u=../remote.git ;;
			file) u=file://$T/$k/remote.git ;;
			ssh) u=ssh://localhost$T/$k/remote.git ;;
			esac
			: >"$T/$k/out"
			scenario $k "$u"
			sed -i "s|$T/$k/|ROOT/|g" "$T/$k/rec"
		done
		same_file "$w: the hook's arguments and stdin as under git push" "$T/git/rec" "$T/pw/rec"
		same_file "$w: messages and exit codes as git push's" "$T/git/out" "$T/pw/out"
		check "$w: remotes equal" same_refs "$T/git/remote.git" "$T/pw/remote.git"
		check "$w: a refused push leaves the remote as it was" \
			cmp -s "$T/git/after-refused" "$T/pw/after-refused"
		check "$w: refused push did not create 'new'" \
			grep -qv refs/heads/new "$T/pw/after-refused"
		contains "$w: the hook ran on the new branch" "$T/pw/rec" "refs/heads/new 0000000"
		contains "$w: the hook saw the delete" "$T/pw/rec" "(delete) 0000000"
		check "$w: --no-verify pushed" git -C "$T/pw/remote.git" show-ref -q --verify refs/heads/nv
		contains "$w: core.hooksPath's hook ran" "$T/pw/rec" "other: origin"
		check "$w: remote fsck" fsck_ok "$T/pw/remote.git"
	done
done

# a hook that exits without reading a long input (more than a pipe holds)
for algo in sha1 sha256; do
	R=$T/long-$algo
	rm -rf "$R"
	git init -q --bare --object-format="$algo" "$R/r.git"
	git init -q --object-format="$algo" "$R/w"
	git -C "$R/w" commit -q --allow-empty -m x
	for i in $(seq 1 1500); do echo "create refs/heads/b$i HEAD"; done | git -C "$R/w" update-ref --stdin
	printf '#!/bin/sh\nexit 0\n' >"$R/w/.git/hooks/pre-push"
	chmod +x "$R/w/.git/hooks/pre-push"
	(cd "$R/w" && "$PACKWIRE" push -q ../r.git 'refs/heads/*:refs/heads/*') 2>"$R/err" &&
		rc=0 || rc=$?
	check "$algo: an unread long input: the push succeeds" test "$rc" = 0
	check "$algo: ... and every ref arrived" \
		test "$(git -C "$R/r.git" for-each-ref | wc -l)" = 1501
	printf '#!/bin/sh\nexit 3\n' >"$R/w/.git/hooks/pre-push"
	git -C "$R/w" commit -q --allow-empty -m y
	for i in $(seq 1 1500); do echo "update refs/heads/b$i HEAD"; done | git -C "$R/w" update-ref --stdin
	refs "$R/r.git" >"$R/before"
	(cd "$R/w" && "$PACKWIRE" push ../r.git 'refs/heads/*:refs/heads/*') 2>"$R/err" &&
		rc=0 || rc=$?
	check "$algo: an unread long input, hook exits 3: exit code 1" test "$rc" = 1
	contains "$algo: ... git's message" "$R/err" "error: failed to push some refs to '../r.git'"
	refs "$R/r.git" >"$R/after"
	same_file "$algo: ... the remote unchanged" "$R/before" "$R/after"
done

finish
