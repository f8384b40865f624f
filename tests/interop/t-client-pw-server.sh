#!/usr/bin/env bash
# packwire on both ends: packwire ls-remote, clone (plain, --bare,
# --depth=1), fetch (new commits, a force-pushed branch, --prune) against
# `packwire upload-pack`, for protocol v0, v1 and v2, over file:// and ssh,
# SHA-1 and SHA-256. Each result is compared with what stock git's client
# gets from stock git upload-pack (refs, HEAD, objects, FETCH_HEAD, output),
# passes git fsck --strict and has the server's object format. Also: empty
# SHA-256 repositories clone as SHA-256 in v0 and v2, and a server of the
# other algorithm is refused with the seeds' messages.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/client-lib.sh"

UP="$PACKWIRE upload-pack"
cd "$T"
for algo in sha1 sha256; do
	make_repo "base-$algo" "$algo" >/dev/null 2>&1
	git init -q --bare --object-format=$algo "empty-$algo.git"
done

gitdir() { git -C "$1" rev-parse --absolute-git-dir; }
# compare WHAT PW GIT
compare() {
	local what=$1 a=$2 b=$3
	check "$what: fsck --strict" fsck_ok "$a"
	check "$what: refs as git" same_refs "$a" "$b"
	check "$what: HEAD as git" cmp -s "$(gitdir "$a")/HEAD" "$(gitdir "$b")/HEAD"
	check "$what: object format" test "$(git -C "$a" rev-parse --show-object-format)" = \
		"$(git -C "$b" rev-parse --show-object-format)"
	if diff <(all_objects "$a") <(all_objects "$b") >/dev/null; then ok "$what: same objects as git"; else
		not_ok "$what: same objects as git ($(all_objects "$a" | wc -l) vs $(all_objects "$b" | wc -l))"
	fi
	if [ -f "$(gitdir "$b")/shallow" ]; then
		check "$what: shallow as git" cmp -s "$(gitdir "$a")/shallow" "$(gitdir "$b")/shallow"
	fi
}

for algo in sha1 sha256; do
	for tr in file ssh; do
		for v in 0 1 2; do
			d="$algo-$tr-v$v"
			rm -rf srv pw-* git-*
			cp -r "base-$algo" srv
			u=$(url $tr "$T/srv")

			pw $v ls-remote --upload-pack="$UP" "$u" >pw.out 2>pw.err || not_ok "$d: ls-remote exit"
			g $v ls-remote "$u" >git.out
			same_file "$d: ls-remote as git's against git" pw.out git.out
			pw $v ls-remote --symref --upload-pack="$UP" "$u" HEAD >pw.out
			g $v ls-remote --symref "$u" HEAD >git.out
			same_file "$d: ls-remote --symref HEAD" pw.out git.out

			pw $v clone -q --upload-pack="$UP" "$u" pw-c 2>err || { not_ok "$d: clone"; cat err; continue; }
			g $v clone -q "$u" git-c 2>/dev/null
			compare "$d clone" pw-c git-c
			check "$d clone: work tree clean" test -z "$(git -C pw-c status --porcelain)"

			pw $v clone -q --bare --upload-pack="$UP" "$u" pw-b.git
			check "$d clone --bare: refs equal to the server's" same_refs pw-b.git srv
			check "$d clone --bare: fsck" fsck_ok pw-b.git

			pw $v clone -q --depth=1 --upload-pack="$UP" "$u" pw-d 2>err || { not_ok "$d: clone --depth=1"; cat err; }
			g $v clone -q --depth=1 "$u" git-d 2>/dev/null
			compare "$d clone --depth=1" pw-d git-d

			# new commits, a rewritten branch, a new tag; then a branch deleted
			(cd srv && echo more >>a.txt && git commit -q -am more &&
				git checkout -q topic && git commit -q --amend -m rewritten && git checkout -q main &&
				git branch -q feature HEAD~1 && git tag -a v1.0 -m v1.0 HEAD)
			(cd pw-c && pw $v fetch --upload-pack="$UP") 2>pw.err || { not_ok "$d: fetch exit"; cat pw.err; }
			(cd git-c && g $v fetch) 2>git.err
			compare "$d fetch" pw-c git-c
			same_file "$d fetch: FETCH_HEAD as git" pw-c/.git/FETCH_HEAD git-c/.git/FETCH_HEAD
			same_file "$d fetch: summary as git" pw.err git.err
			(cd srv && git branch -q -D feature)
			(cd pw-c && pw $v fetch --prune --upload-pack="$UP") 2>pw.err
			(cd git-c && g $v fetch --prune) 2>git.err
			compare "$d fetch --prune" pw-c git-c
			same_file "$d fetch --prune: summary as git" pw.err git.err
		done
	done
	# empty repositories: the server's algorithm, in v0 (capabilities^{}) and v2
	for v in 0 2; do
		rm -rf "pw-empty-$algo-$v"
		pw $v clone -q --upload-pack="$UP" "file://$T/empty-$algo.git" "pw-empty-$algo-$v" 2>/dev/null
		check "empty $algo v$v: clone is $algo" \
			test "$(git -C "pw-empty-$algo-$v" rev-parse --show-object-format)" = "$algo"
		check "empty $algo v$v: no refs, fsck" test -z "$(refs "pw-empty-$algo-$v")"
	done
done

# a server of the other algorithm: the seeds' messages, nothing changed
for pair in "sha1 sha256" "sha256 sha1"; do
	set -- $pair
	for v in 0 2; do
		state "base-$1" >before
		(cd "base-$1" && pw $v fetch --upload-pack="$UP" "$T/base-$2" 'refs/heads/*:refs/remotes/x/*') 2>err && rc=0 || rc=$?
		check "$1 repo, $2 packwire server, v$v: exit 128" test "$rc" = 128
		if [ $v = 2 ]; then
			contains "$1 repo, $2 packwire server, v$v: message" err "fatal: mismatched algorithms: client $1; server $2"
		else
			contains "$1 repo, $2 packwire server, v$v: message" err \
				"fatal: Server does not support this repository's object format"
		fi
		state "base-$1" >after
		same_file "$1 repo, $2 packwire server, v$v: unchanged" before after
	done
done
finish
