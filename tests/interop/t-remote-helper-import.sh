#!/usr/bin/env bash
# packwire using import/export remote helpers (no fetch, push or connect): a
# helper written here, in the manner of Git's git-remote-testgit, serves a
# local repository as a "foreign" one through git fast-export (import) and
# git fast-import (export), with a private namespace (refspec capability),
# marks files (*import-marks / *export-marks) and object-format. Clone,
# fetch, push and ls-remote; a helper that crashes or sends garbage leaves
# both repositories as they were. SHA-1 and SHA-256, checked with fsck
# --strict, refs and objects.
. "$(dirname "$0")/lib.sh"
unset GIT_ALLOW_PROTOCOL GIT_PROTOCOL_FROM_USER
pw() { "$PACKWIRE" "$@"; }

mkdir -p bin
cat >bin/git-remote-pwfi <<'HELPER'
#!/bin/bash
# git-remote-pwfi <remote> <path>: import/export <path> with git fast-export/fast-import
set -e
url=$2
alias=$1
[ "$alias" != "$url" ] || alias=_
alias=${alias//[^a-zA-Z0-9]/_}
dir=${GIT_DIR:-$PWFI_HOME}/pwfi/$alias
prefix=refs/pwfi/$alias
gitmarks=$dir/git.marks
mymarks=$dir/pwfi.marks
mkdir -p "$dir"
[ -e "$mymarks" ] || : >"$mymarks"
log=${PWFI_LOG:-/dev/null}
while read -r cmd arg rest; do
	echo "$cmd${arg:+ $arg}${rest:+ $rest}" >>"$log"
	case $cmd in
	capabilities)
		echo import
		echo export
		echo option
		echo object-format
		echo "refspec refs/heads/*:$prefix/heads/*"
		echo "refspec refs/tags/*:refs/tags/*"
		[ -e "$gitmarks" ] && echo "*import-marks $gitmarks"
		echo "*export-marks $gitmarks"
		echo ;;
	option) [ "$arg" = object-format ] && echo ok || echo unsupported ;;
	list)
		[ "${PWFI_CRASH:-}" = list ] && exit 3
		echo ":object-format $(git --git-dir="$url" rev-parse --show-object-format)"
		git --git-dir="$url" for-each-ref --format='? %(refname)' refs/heads refs/tags
		if h=$(git --git-dir="$url" symbolic-ref -q HEAD); then echo "@$h HEAD"; fi
		echo ;;
	import)
		refs=$arg
		while read -r c2 a2; do [ -n "$c2" ] || break; refs="$refs $a2"; done
		case ${PWFI_CRASH:-} in
		import) exit 3 ;;
		garbage) printf 'blob\nmark :1\ndata 999999\nshort\n'; exit 0 ;;
		nodone) printf 'progress half a stream\n'; exit 0 ;;
		hang) printf 'progress half a stream\n'; sleep 3; exit 0 ;;
		esac
		[ -e "$gitmarks" ] && echo "feature import-marks=$gitmarks"
		echo "feature export-marks=$gitmarks"
		echo "feature force"
		# shellcheck disable=SC2086
		git --git-dir="$url" fast-export --use-done-feature --signed-tags=verbatim \
			--import-marks="$mymarks" --export-marks="$mymarks" $refs |
			sed -e "s#^\(commit\|reset\) refs/heads/#\1 $prefix/heads/#" ;;
	export)
		[ "${PWFI_CRASH:-}" = export ] && exit 3
		git --git-dir="$url" fast-import --quiet --force --import-marks="$mymarks" --export-marks="$mymarks" \
			<&0 >"$dir/fi.out" 2>"$dir/fi.err" &&
			st=ok || st=failed
		# which refs: what fast-import updated, from its marks' view of the stream
		git --git-dir="$url" for-each-ref --format='%(refname)' refs/heads refs/tags >"$dir/after"
		if [ $st = ok ]; then
			while read -r r; do echo "ok $r"; done <"$dir/after"
		else
			while read -r r; do echo "error $r fast-import failed"; done <"$dir/after"
		fi
		echo ;;
	'') exit 0 ;;
	*) echo "unknown $cmd" >&2; exit 1 ;;
	esac
done
HELPER
chmod +x bin/git-remote-pwfi
export PATH=$T/bin:$PATH PWFI_LOG=$T/pwfi.log PWFI_HOME=$T

state() { refs "$1"; all_objects "$1"; }

for algo in sha1 sha256; do
	t="pwfi $algo"
	make_repo "src-$algo" "$algo"
	srv=$T/srv-$algo.git
	git clone -q --bare "src-$algo" "$srv"
	# fast-export cannot export a tag of a tag
	git -C "$srv" tag -d v0.2-annotated >/dev/null
	# ls-remote: the values are those the import found (outside a
	# repository the helper keeps its marks under PWFI_HOME)
	mkdir -p "home-$algo"
	PWFI_HOME=$T/home-$algo pw ls-remote "pwfi::$srv" >"ls-$algo" 2>"ls-$algo.err" || { not_ok "$t: ls-remote"; cat "ls-$algo.err"; }
	git ls-remote "$srv" | grep -v '\^{}$' | sort -k2 >"ls-$algo.expect"
	sort -k2 "ls-$algo" >"ls-$algo.sorted"
	same_file "$t: ls-remote lists the refs with their values" "ls-$algo.expect" "ls-$algo.sorted"
	if ! pw clone -q "pwfi::$srv" "c-$algo" 2>"c-$algo.err"; then
		not_ok "$t: clone through import"
		cat "c-$algo.err"
		continue
	fi
	c=$T/c-$algo
	check "$t: clone is fsck --strict clean" fsck_ok "$c"
	check "$t: clone's object format" test "$(git -C "$c" rev-parse --show-object-format)" = "$algo"
	check "$t: clone has every branch" \
		diff -q <(git -C "$c" for-each-ref --format='%(objectname) %(refname:lstrip=3)' refs/remotes/origin | grep -v ' HEAD$') \
		<(git -C "$srv" for-each-ref --format='%(objectname) %(refname:lstrip=2)' refs/heads)
	check "$t: clone has the tags" \
		diff -q <(git -C "$c" for-each-ref --format='%(objectname) %(refname)' refs/tags) \
		<(git -C "$srv" for-each-ref --format='%(objectname) %(refname)' refs/tags)
	check "$t: HEAD checked out" test "$(git -C "$c" rev-parse HEAD)" = "$(git -C "$srv" rev-parse HEAD)"
	check "$t: work tree is clean" test -z "$(git -C "$c" status --porcelain)"
	check "$t: the helper's private ref" \
		test "$(git -C "$c" rev-parse refs/pwfi/origin/heads/main)" = "$(git -C "$srv" rev-parse main)"
	check "$t: no import directory left behind" test -z "$(find "$c/.git" -maxdepth 1 -name 'packwire-import-*')"
	# fetch, incremental (marks)
	git clone -q "$srv" "w-$algo"
	(cd "w-$algo" && echo remote >>a.txt && git commit -q -am "on the remote" && git push -q origin main)
	state "$c" >before-local
	if pw -C "$c" fetch -q origin 2>"f-$algo.err"; then
		check "$t: fetch brings the new commit" \
			test "$(git -C "$c" rev-parse origin/main)" = "$(git -C "$srv" rev-parse main)"
		check "$t: fetched repository is fsck --strict clean" fsck_ok "$c"
	else
		not_ok "$t: fetch"
		cat "f-$algo.err"
	fi
	git -C "$c" merge -q --ff-only origin/main
	# push through export
	(cd "$c" && echo local >>a.txt && git commit -q -am "exported" && git tag -a v9 -m "exported tag")
	: >"$PWFI_LOG"
	if pw -C "$c" push origin main v9 2>"p-$algo.err"; then
		check "$t: the remote has the pushed commit" \
			test "$(git -C "$srv" rev-parse main)" = "$(git -C "$c" rev-parse main)"
		check "$t: the remote has the pushed tag" \
			test "$(git -C "$srv" rev-parse v9)" = "$(git -C "$c" rev-parse v9)"
		check "$t: remote is fsck --strict clean" fsck_ok "$srv"
		check "$t: remote-tracking ref updated" \
			test "$(git -C "$c" rev-parse origin/main)" = "$(git -C "$c" rev-parse main)"
		check "$t: private ref updated" \
			test "$(git -C "$c" rev-parse refs/pwfi/origin/heads/main)" = "$(git -C "$c" rev-parse main)"
		check "$t: export marks kept" test -s "$c/.git/pwfi/origin/git.marks"
		contains "$t: list for-push" "$PWFI_LOG" "list for-push"
		contains "$t: export command" "$PWFI_LOG" "export"
	else
		not_ok "$t: push through export"
		cat "p-$algo.err"
	fi
	# a second push: incremental, a new branch under another name
	(cd "$c" && echo again >>a.txt && git commit -q -am "second export")
	if pw -C "$c" push origin main 2>"p2-$algo.err" && pw -C "$c" push origin main:refs/heads/other 2>>"p2-$algo.err"; then
		check "$t: second push" test "$(git -C "$srv" rev-parse main)" = "$(git -C "$c" rev-parse main)"
		check "$t: push to another name (--refspec)" \
			test "$(git -C "$srv" rev-parse other)" = "$(git -C "$c" rev-parse main)"
		check "$t: remote is fsck --strict clean after the second push" fsck_ok "$srv"
	else
		not_ok "$t: second push"
		cat "p2-$algo.err"
	fi
	check_fails "$t: deleting through export is refused" pw -C "$c" push origin :refs/heads/other
	check "$t: ... and the branch is still there" git -C "$srv" rev-parse -q --verify refs/heads/other
	# failures: nothing written on either side
	(cd "w-$algo" && git pull -q && echo more >>a.txt && git commit -q -am "more remote" && git push -q origin main)
	(cd "$c" && echo l2 >>a.txt && git commit -q -am "local again")
	for how in list import garbage nodone; do
		check_fails "$t: clone, helper failing at $how" env PWFI_CRASH=$how "$PACKWIRE" clone -q "pwfi::$srv" "bad-$how-$algo"
		check "$t: clone, helper failing at $how: nothing written" test ! -e "bad-$how-$algo"
		state "$c" >before-local
		PWFI_CRASH=$how pw -C "$c" fetch -q origin 2>"bad-$how-$algo.err" &&
			not_ok "$t: fetch, helper failing at $how (unexpectedly succeeded)" ||
			ok "$t: fetch, helper failing at $how fails"
		contains "$t: fetch, helper failing at $how: names the helper" "bad-$how-$algo.err" "pwfi"
		state "$c" >after-local
		same_file "$t: fetch, helper failing at $how: local repository as it was" before-local after-local
		check "$t: fetch, helper failing at $how: no import directory left" \
			test -z "$(find "$c/.git" -maxdepth 1 -name 'packwire-import-*')"
	done
	# SIGTERM during an import: nothing half-written in the repository, and
	# the next fetch removes what the killed one left beside it
	state "$c" >before-local
	PWFI_CRASH=hang "$PACKWIRE" -C "$c" fetch -q origin 2>/dev/null &
	pid=$!
	sleep 1
	kill -TERM "$pid"
	wait "$pid" || true
	state "$c" >after-local
	same_file "$t: fetch killed by SIGTERM: local repository as it was" before-local after-local
	sleep 3
	check "$t: fetch after the killed one" pw -C "$c" fetch -q origin
	check "$t: ... removed the killed import's directory" \
		test -z "$(find "$c/.git" -maxdepth 1 -name 'packwire-import-*')"
	check "$t: ... and brought the remote's commit" \
		test "$(git -C "$c" rev-parse origin/main)" = "$(git -C "$srv" rev-parse main)"
	state "$srv" >before
	state "$c" >before-local
	check_fails "$t: push, helper crashing at export" env PWFI_CRASH=export "$PACKWIRE" -C "$c" push origin main
	state "$srv" >after
	state "$c" >after-local
	same_file "$t: push, helper crashing: remote as it was" before after
	same_file "$t: push, helper crashing: local repository as it was" before-local after-local
	check "$t: client is fsck --strict clean at the end" fsck_ok "$c"
done
finish
