#!/usr/bin/env bash
# Object-format rules on the client: fetching from a server whose algorithm
# differs from the repository's fails with the seeds' messages (v0/v1:
# "Server does not support this repository's object format"; v2:
# "mismatched algorithms: client X; server Y"), exits non-zero like git, and
# leaves refs and objects exactly as they were.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/client-lib.sh"

cd "$T"
make_repo srv-sha1 sha1 >/dev/null 2>&1
make_repo srv-sha256 sha256 >/dev/null 2>&1
# local repositories with some history of their own
make_repo local-sha1 sha1 >/dev/null 2>&1
make_repo local-sha256 sha256 >/dev/null 2>&1

for pair in "sha1 sha256" "sha256 sha1"; do
	set -- $pair
	ours=$1 theirs=$2
	for tr in file ssh; do
		for v in 0 1 2; do
			d="$ours repo, $theirs server, $tr v$v"
			u=$(url $tr "$T/srv-$theirs")
			state "local-$ours" >before
			(cd "local-$ours" && pw $v fetch "$u" 'refs/heads/*:refs/remotes/x/*') 2>pw.err && rc=0 || rc=$?
			check "$d: no FETCH_HEAD" test ! -e "local-$ours/.git/FETCH_HEAD"
			(cd "local-$ours" && g $v fetch "$u" 'refs/heads/*:refs/remotes/x/*') 2>git.err || true
			rm -f "local-$ours/.git/FETCH_HEAD"
			check "$d: exit 128" test "$rc" = 128
			if [ $v = 2 ]; then
				msg="fatal: mismatched algorithms: client $ours; server $theirs"
			else
				msg="fatal: Server does not support this repository's object format"
			fi
			contains "$d: message" pw.err "$msg"
			check "$d: same first line as git" test "$(head -1 pw.err)" = "$(grep -m1 '^fatal' git.err)"
			state "local-$ours" >after
			same_file "$d: refs, objects, packs unchanged" before after
		done
	done
done
# ls-remote outside a repository has no algorithm of its own to defend
mkdir -p outside
ls_outside() { (cd outside && pw 2 ls-remote "$T/srv-sha256" >ls-remote.out); }
check "ls-remote of a sha256 server outside a repository works" ls_outside
check "... and lists the server's refs" \
	test "$(cut -f2 outside/ls-remote.out | grep -c '^refs/heads/')" = \
	"$(git -C srv-sha256 for-each-ref refs/heads | wc -l)"
finish
