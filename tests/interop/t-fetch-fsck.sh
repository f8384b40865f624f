#!/usr/bin/env bash
# fetch.fsckObjects / transfer.fsckObjects in packwire fetch and clone,
# beside stock git in the same situation: objects Git's fsck refuses (made
# with `git hash-object --literally`: a bad email, a tree with "..", with
# ".git", with a duplicate entry, with a zero-padded mode) fetched with the
# check on, off, and with fetch.fsck.<id> / fetch.fsck.skipList, over
# file:// (git's and packwire's upload-pack), ssh, git:// (git daemon and
# packwire daemon) and smart HTTP (git and packwire http-backend); and
# bundles and dumb HTTP, which Git 2.39 does not check. For each: the same
# success or failure as git, the same stderr lines, and after a failure
# the repository as it was (refs, objects/pack: git leaves a tmp_pack_*
# behind, packwire nothing). SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
. "$(dirname "$0")/http-lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
use_fake_ssh
trap 'stop_daemons; http_cleanup' EXIT

# tree_bytes MODE NAME HEX [MODE NAME HEX...]: a raw tree on stdout
tree_bytes() {
	python3 -c '
import sys
a = sys.argv[1:]
out = b""
for i in range(0, len(a), 3):
    out += a[i].encode() + b" " + a[i + 1].encode() + b"\0" + bytes.fromhex(a[i + 2])
sys.stdout.buffer.write(out)' "$@"
}

# make_bad DIR ALGO: a bare repository with main (good) and one branch per
# problem
make_bad() {
	local d=$1 algo=$2 blob tree c t
	git init -q --bare --object-format="$algo" "$d"
	blob=$(echo hello | git -C "$d" hash-object -w --stdin)
	tree=$(tree_bytes 100644 a "$blob" | git -C "$d" hash-object -t tree -w --stdin)
	commit() { # TREE AUTHOR-LINE-REST COMMITTER-LINE-REST
		printf 'tree %s\nauthor %s\ncommitter %s\n\nmsg\n' "$1" "$2" "$3" |
			git -C "$d" hash-object --literally -t commit -w --stdin
	}
	local ok_id='A U <a@example.com> 1700000000 +0000'
	git -C "$d" update-ref refs/heads/main "$(commit "$tree" "$ok_id" "$ok_id")"
	git -C "$d" update-ref refs/heads/email \
		"$(commit "$tree" "$ok_id" 'C <c@example.com 1700000000 +0000')"
	for t in dotdot:.. dotgit:.git; do
		c=$(tree_bytes 100644 "${t#*:}" "$blob" | git -C "$d" hash-object --literally -t tree -w --stdin)
		git -C "$d" update-ref "refs/heads/${t%%:*}" "$(commit "$c" "$ok_id" "$ok_id")"
	done
	c=$(tree_bytes 100644 a "$blob" 100644 a "$blob" | git -C "$d" hash-object --literally -t tree -w --stdin)
	git -C "$d" update-ref refs/heads/dup "$(commit "$c" "$ok_id" "$ok_id")"
	c=$(tree_bytes 0100644 a "$blob" | git -C "$d" hash-object --literally -t tree -w --stdin)
	git -C "$d" update-ref refs/heads/zeromode "$(commit "$c" "$ok_id" "$ok_id")"
	touch "$d/git-daemon-export-ok"
}

# after_fail DIR: what a failed fetch may leave: refs and objects/pack,
# Git's tmp_pack_* left out (git leaves one behind; see no_tmp)
after() {
	refs "$1"
	(cd "$(git -C "$1" rev-parse --absolute-git-dir)/objects" &&
		find . -type f ! -name 'tmp_pack_*' | sort)
}
no_tmp() { [ -z "$(find "$(git -C "$1" rev-parse --absolute-git-dir)" -name 'tmp*')" ]; }

# program-neutral messages: "Cloning into" names the directory; a server
# whose client hung up mid-pack (git's index-pack stops at the bad object)
# may say so on the stderr both share, or not: a race, not the client's line
neutral() {
	sed -E -e "s/'(c|d)-(pw|git)[^']*'/'DIR'/g" -e 's/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g' \
		-e '/^fatal: write error: Broken pipe$/d' "$1"
}
same_err() {
	if diff <(neutral "$2") <(neutral "$3") >/dev/null; then ok "$1"; else
		not_ok "$1"
		diff -u <(neutral "$2") <(neutral "$3") | head -20 || true
	fi
}

# fetch_case NAME URL REF [CONFIG...]: git fetch and packwire fetch of REF
# into fresh repositories with the same configuration; UP (may be empty)
# is git's --upload-pack, PWUP packwire's
fetch_case() {
	local name=$1 url=$2 ref=$3 rg rp k
	shift 3
	local cfg=() c
	for c in "$@"; do cfg+=(-c "$c"); done
	for k in git pw; do
		rm -rf "d-$k"
		git init -q --object-format="$algo" "d-$k"
		after "d-$k" >"before-$k"
	done
	git -C d-git "${cfg[@]}" fetch -q ${UP:+--upload-pack="$UP"} "$url" \
		"+refs/heads/$ref:refs/remotes/o/$ref" 2>err-git && rg=0 || rg=$?
	"$PACKWIRE" -C d-pw "${cfg[@]}" fetch -q ${PWUP:+--upload-pack="$PWUP"} "$url" \
		"+refs/heads/$ref:refs/remotes/o/$ref" 2>err-pw && rp=0 || rp=$?
	check "$name: exit code as git's ($rg)" test "$rg" = "$rp"
	same_err "$name: messages as git's" err-git err-pw
	if [ "$rg" -ne 0 ]; then
		after d-pw >after-pw
		same_file "$name: repository unchanged" before-pw after-pw
		check "$name: no temporary file left" no_tmp d-pw
	else
		check "$name: same refs as git" same_refs d-git d-pw
		check "$name: fetched objects present" git -C d-pw cat-file -e "refs/remotes/o/$ref"
	fi
}

# clone_case NAME URL [CONFIG...]: git clone and packwire clone
clone_case() {
	local name=$1 url=$2 rg rp
	shift 2
	local cfg=() c
	for c in "$@"; do cfg+=(-c "$c"); done
	rm -rf c-git c-pw
	git "${cfg[@]}" clone ${UP:+--upload-pack="$UP"} "$url" c-git 2>err-git && rg=0 || rg=$?
	"$PACKWIRE" "${cfg[@]}" clone ${PWUP:+--upload-pack="$PWUP"} "$url" c-pw 2>err-pw &&
		rp=0 || rp=$?
	check "$name: exit code as git's ($rg)" test "$rg" = "$rp"
	same_err "$name: messages as git's" err-git err-pw
	if [ "$rg" -ne 0 ]; then
		check "$name: the directory it created is gone" test ! -e c-pw
	else
		check "$name: same refs as git" same_refs c-git c-pw
	fi
}

mkdir -p srv
for algo in sha1 sha256; do
	make_bad "srv/bad-$algo.git" "$algo"
	# one bad object only, for clones (which object a pack names first
	# is the pack's business)
	git init -q --bare --object-format="$algo" "srv/one-$algo.git"
	git -C "srv/bad-$algo.git" push -q "$T/srv/one-$algo.git" main email
	touch "srv/one-$algo.git/git-daemon-export-ok"
	cp -r "srv/bad-$algo.git" "srv/dumb-$algo.git"
	git -C "srv/dumb-$algo.git" update-server-info
done
email_hex() { git -C "$T/srv/bad-$algo.git" rev-parse email; }

for algo in sha1 sha256; do
	S=$T/srv/bad-$algo.git
	O=$T/srv/one-$algo.git
	UP= PWUP=
	on=fetch.fsckObjects=true
	# every problem, with git's upload-pack over file://, v0 and v2
	for v in 0 2; do
		for r in email dotdot dotgit dup zeromode; do
			fetch_case "$algo v$v file $r, fsck on" "file://$S" $r protocol.version=$v $on
		done
		fetch_case "$algo v$v main, fsck on" "file://$S" main protocol.version=$v $on
	done
	# the switches and severities
	fetch_case "$algo email, fsck off" "file://$S" email $on fetch.fsckObjects=false
	fetch_case "$algo email, transfer.fsckObjects" "file://$S" email transfer.fsckObjects=true
	fetch_case "$algo email, fetch.* wins over transfer.*" "file://$S" email \
		transfer.fsckObjects=true fetch.fsckObjects=false
	fetch_case "$algo email, badEmail=warn" "file://$S" email $on fetch.fsck.badEmail=warn
	fetch_case "$algo email, badEmail=ignore" "file://$S" email $on fetch.fsck.badEmail=ignore
	fetch_case "$algo email, fsck.badEmail=ignore (not read by fetch)" "file://$S" email $on \
		fsck.badEmail=ignore
	fetch_case "$algo dotdot, hasDotdot=warn" "file://$S" dotdot $on fetch.fsck.hasDotdot=warn
	fetch_case "$algo zeromode, zeroPaddedFilemode=ignore" "file://$S" zeromode $on \
		fetch.fsck.zeroPaddedFilemode=ignore
	fetch_case "$algo email, unknown id" "file://$S" email $on fetch.fsck.noSuchId=warn
	fetch_case "$algo email, bad severity" "file://$S" email $on fetch.fsck.badEmail=bogus
	fetch_case "$algo email, fatal id demoted" "file://$S" email $on fetch.fsck.nulInHeader=warn
	email_hex >"$T/skip-$algo"
	fetch_case "$algo email, skipList" "file://$S" email $on fetch.fsck.skipList="$T/skip-$algo"
	fetch_case "$algo main, missing skipList" "file://$S" main $on fetch.fsck.skipList="$T/nothing"
	# as many objects as the unpack limit: Git's last line changes
	fetch_case "$algo email, unpackLimit=1" "file://$S" email $on transfer.unpackLimit=1
	clone_case "$algo file clone, fsck on" "file://$O" transfer.fsckObjects=true
	clone_case "$algo file clone, fsck off" "file://$O"
	clone_case "$algo file clone, badEmail=ignore" "file://$O" transfer.fsckObjects=true \
		fetch.fsck.badEmail=ignore
	# ssh
	fetch_case "$algo ssh email, fsck on" "ssh://localhost$S" email $on
	clone_case "$algo ssh clone, fsck on" "ssh://localhost$O" transfer.fsckObjects=true
	# packwire's upload-pack, for both clients (a file:// URL: git clones
	# a plain path by copying, without upload-pack and without a check)
	UP="$PACKWIRE upload-pack" PWUP="$PACKWIRE upload-pack"
	for r in email dup dotgit; do
		fetch_case "$algo pw-upload-pack $r, fsck on" "file://$S" $r $on
	done
	fetch_case "$algo pw-upload-pack dup, duplicateEntries=warn" "file://$S" dup $on \
		fetch.fsck.duplicateEntries=warn
	clone_case "$algo pw-upload-pack clone, fsck on" "file://$O" transfer.fsckObjects=true
	UP= PWUP=
	# bundles: Git 2.39 does not check them
	git -C "$S" bundle create "$T/b-$algo.bundle" HEAD main email dup 2>/dev/null
	fetch_case "$algo bundle email, fsck on (not checked)" "$T/b-$algo.bundle" email $on
	clone_case "$algo bundle clone, fsck on (not checked)" "$T/b-$algo.bundle" \
		transfer.fsckObjects=true
done

# git:// (git daemon, packwire daemon)
GP=$(free_port)
start_daemon gitd git "$GP" --base-path="$T/srv"
PP=$(free_port)
start_daemon pwdaemon pw "$PP" --base-path="$T/srv"
for algo in sha1 sha256; do
	for d in "git $GP" "pw $PP"; do
		set -- $d
		fetch_case "$algo $1-daemon email, fsck on" "git://127.0.0.1:$2/bad-$algo.git" email \
			fetch.fsckObjects=true
		fetch_case "$algo $1-daemon email, ignore" "git://127.0.0.1:$2/bad-$algo.git" email \
			fetch.fsckObjects=true fetch.fsck.badEmail=ignore
		clone_case "$algo $1-daemon clone, fsck on" "git://127.0.0.1:$2/one-$algo.git" \
			transfer.fsckObjects=true
	done
done
stop_daemons

# HTTP: smart (git and packwire http-backend) and dumb (a static server)
if need_httpd; then
	start_httpd "$T/srv"
	U=http://127.0.0.1:$HTTPD_PORT
	for algo in sha1 sha256; do
		for be in git pw; do
			fetch_case "$algo http-$be email, fsck on" "$U/$be-open/bad-$algo.git" email \
				fetch.fsckObjects=true
			fetch_case "$algo http-$be dup, ignore" "$U/$be-open/bad-$algo.git" dup \
				fetch.fsckObjects=true fetch.fsck.duplicateEntries=ignore
			clone_case "$algo http-$be clone, fsck on" "$U/$be-open/one-$algo.git" \
				transfer.fsckObjects=true
		done
	done
	stop_httpd
else
	skip "apache2, curl or openssl missing: no smart HTTP cases"
fi
DP=$(free_port)
(cd "$T/srv" && exec python3 -m http.server "$DP" --bind 127.0.0.1) >/dev/null 2>&1 &
DUMB_PID=$!
trap 'kill $DUMB_PID 2>/dev/null || true; wait $DUMB_PID 2>/dev/null || true; stop_daemons; http_cleanup' EXIT
for _ in $(seq 1 100); do
	curl -s -o /dev/null "http://127.0.0.1:$DP/" && break
	sleep 0.1
done
for algo in sha1 sha256; do
	fetch_case "$algo dumb http email, fsck on (not checked)" \
		"http://127.0.0.1:$DP/dumb-$algo.git" email fetch.fsckObjects=true
done
kill $DUMB_PID
wait $DUMB_PID 2>/dev/null || true

finish
