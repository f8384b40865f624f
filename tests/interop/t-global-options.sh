#!/bin/bash
# Git's options before the command, as `git` takes them: -C <path> (each
# relative to the one before; "" is ignored), --git-dir[=]<path>,
# --work-tree[=]<path> and -c <name>[=<value>]. Same output and exit codes as
# git; -c settings reach the processes packwire starts (GIT_CONFIG_PARAMETERS)
# and the GIT_* environment reaches the library only through the CLI.
. "$(dirname "$0")/lib.sh"

# run WHO ARGS...: stdout+stderr to $T/<who>.out, exit code appended
run() {
	local who=$1 out; shift
	[ "$who" = git ] && out=$T/want || out=$T/got
	if [ "$who" = git ]; then (cd "$T" && git "$@"); else (cd "$T" && "$PACKWIRE" "$@"); fi \
		>"$out" 2>&1 && echo "rc=0" >>"$out" || echo "rc=$?" >>"$out"
	# the usage text after a missing value is git's own
	sed -i '/^usage: \(git\|packwire\) /,/^ *<command>/d; /^   *\[/d' "$out"
}

# as_git NAME ARGS...: packwire ARGS and git ARGS give the same answer
as_git() {
	local name=$1; shift
	run git "$@"
	run pw "$@"
	same_file "$name" "$T/want" "$T/got"
}

for algo in sha1 sha256; do
	r=$T/repo-$algo
	make_repo "$r" $algo
	git clone -q --bare "$r" "$T/bare-$algo.git"
	mkdir -p "$T/wt-$algo"

	# -C, repeated and relative, and "" ignored
	as_git "$algo: -C DIR rev-parse --git-dir" -C "repo-$algo" rev-parse --git-dir
	as_git "$algo: -C DIR cat-file -t HEAD" -C "repo-$algo" cat-file -t HEAD
	as_git "$algo: -C A -C B (relative)" -C "repo-$algo" -C sub/deeper rev-parse --show-toplevel
	as_git "$algo: -C A -C ..(relative)" -C "repo-$algo/sub" -C .. rev-parse HEAD main v0.1
	as_git "$algo: -C '' is ignored" -C "" -C "repo-$algo" rev-parse --is-bare-repository
	as_git "$algo: -C bare repository" -C "bare-$algo.git" rev-parse --is-bare-repository --git-dir
	as_git "$algo: -C DIR show-ref" -C "repo-$algo" show-ref

	# --git-dir and --work-tree, both spellings
	as_git "$algo: --git-dir=X" --git-dir="bare-$algo.git" rev-parse --git-dir --is-bare-repository
	as_git "$algo: --git-dir X" --git-dir "bare-$algo.git" cat-file -p v0.1
	as_git "$algo: --git-dir=X show-ref" --git-dir="repo-$algo/.git" show-ref --tags
	as_git "$algo: --git-dir with --work-tree=" --git-dir="bare-$algo.git" --work-tree="wt-$algo" \
		rev-parse --is-bare-repository --show-toplevel
	as_git "$algo: --work-tree X --git-dir X" --work-tree "wt-$algo" --git-dir "repo-$algo/.git" \
		rev-parse --show-toplevel
	as_git "$algo: -C then --git-dir relative to it" -C "repo-$algo" --git-dir=.git rev-parse HEAD
	as_git "$algo: --git-dir=missing" --git-dir=nowhere rev-parse --git-dir

	# -c key=value and a bare -c key (true), also with -C
	for c in "-c uploadpack.allowFilter=true" "-c uploadpack.allowFilter" \
		"-c uploadpack.allowFilter=false -c uploadpack.allowFilter"; do
		# shellcheck disable=SC2086
		(cd "$T" && GIT_PROTOCOL=version=2 git -C "repo-$algo" $c upload-pack --advertise-refs .) |
			tr '\0' '\n' | sed 's/^....//; s/agent=[^ ]*//' >"$T/want"
		# shellcheck disable=SC2086
		(cd "$T" && GIT_PROTOCOL=version=2 "$PACKWIRE" -C "repo-$algo" $c upload-pack \
			--advertise-refs .) | tr '\0' '\n' | sed 's/^....//; s/agent=[^ ]*//' >"$T/got"
		same_file "$algo: -C DIR $c upload-pack: advertisement as git" "$T/want" "$T/got"
	done
	(cd "$T" && "$PACKWIRE" -c nodot=1 -C "repo-$algo" rev-parse --git-dir) >/dev/null 2>&1 &&
		rc=0 || rc=$?
	check "$algo: -c with a bad key: exit 128 as git" [ $rc = 128 ]

	# -c reaches the server process packwire starts, as with git
	"$PACKWIRE" -c uploadpack.allowFilter=true -c protocol.version=2 clone -q --bare \
		--filter=blob:none "file://$r" "$T/partial-$algo.git" 2>"$T/err"
	check "$algo: -c reaches the upload-pack child (no filter warning)" [ ! -s "$T/err" ]
	check "$algo: partial clone made" test "$(git -C "$T/partial-$algo.git" config \
		remote.origin.partialclonefilter)" = blob:none
	"$PACKWIRE" clone --bare --filter=blob:none "file://$r" "$T/nofilter-$algo.git" 2>"$T/err"
	contains "$algo: without -c the server ignores the filter" "$T/err" \
		"filtering not recognized by server"

	# fetch with -C and --git-dir, as git
	git clone -q --bare "$r" "$T/fetch-$algo.git"
	git -C "$r" commit -q --allow-empty -m more
	"$PACKWIRE" -C "$T" --git-dir="fetch-$algo.git" fetch -q "$r" main:refs/heads/main
	check "$algo: --git-dir fetch updated main" test "$(git -C "$T/fetch-$algo.git" rev-parse main)" \
		= "$(git -C "$r" rev-parse main)"
done

# errors: same exit code and message as git
as_git "-C missing directory" -C /nonexistent/dir rev-parse --git-dir
as_git "-C without a value" -C
as_git "--git-dir without a value" --git-dir
as_git "--work-tree without a value" --work-tree
as_git "-c without a value" -c
run git -C . no-such-command
sed -i 's/git/packwire/g' "$T/want"
run pw -C . no-such-command
same_file "unknown command after -C: as git's message" "$T/want" "$T/got"
finish
