#!/usr/bin/env bash
# packwire clone and fetch options checked against what stock git makes from
# the same server (stock git upload-pack), SHA-1 and SHA-256, protocols v0
# and v2: partial clones (--filter=blob:none, blob:limit=N, tree:0; bare and
# with a checkout) that git accepts as such (promisor config, .promisor
# packs, git fsck --strict, the same objects as git's partial clone, a later
# fetch keeps the filter), --mirror, --branch/-b (branch and tag), --origin,
# --no-checkout, --single-branch; fetch --tags, negative refspecs and their
# FETCH_HEAD and summary lines.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/client-lib.sh"

cd "$T"
for algo in sha1 sha256; do
	make_repo "srv-$algo" "$algo" >/dev/null 2>&1
	git -C "srv-$algo" config uploadpack.allowFilter true
	# git's lazy fetches (and packwire's checkout fetch) in v0 want blobs by id
	git -C "srv-$algo" config uploadpack.allowAnySHA1InWant true
done

objects_of() { git -C "$1" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype)' | sort; }
missing_of() { git -C "$1" rev-list --objects --all --missing=print 2>/dev/null | grep '^?' | sort || true; }
gitdir() { git -C "$1" rev-parse --absolute-git-dir; }
worktree_clean() { [ -z "$(git -C "$1" status --porcelain 2>/dev/null)" ]; }

# same_as_git WHAT PW GIT: refs, HEAD, config, objects, fsck
same_as_git() {
	local what=$1 a=$2 b=$3
	if fsck_ok "$a"; then ok "$what: fsck --strict"; else
		not_ok "$what: fsck --strict"
		git -C "$a" fsck --strict 2>&1 | head -5 || true
	fi
	check "$what: refs as git" same_refs "$a" "$b"
	check "$what: HEAD as git" cmp -s "$(gitdir "$a")/HEAD" "$(gitdir "$b")/HEAD"
	if cmp -s "$(gitdir "$a")/config" "$(gitdir "$b")/config"; then ok "$what: config as git"; else
		not_ok "$what: config as git"
		diff "$(gitdir "$a")/config" "$(gitdir "$b")/config" | head -10 || true
	fi
	if diff <(objects_of "$a") <(objects_of "$b") >/dev/null; then ok "$what: same objects as git"; else
		not_ok "$what: same objects as git ($(objects_of "$a" | wc -l) vs $(objects_of "$b" | wc -l))"
	fi
}

for algo in sha1 sha256; do
	S=$T/srv-$algo
	for v in 0 2; do
		w="$algo v$v"
		# ---- partial clones ---------------------------------------------------
		for f in blob:none blob:limit=100 tree:0; do
			for kind in bare wt; do
				opt=()
				[ $kind = bare ] && opt=(--bare)
				pwc=pf-$algo-$v-${f%%[:=]*}-${f##*[:=]}-$kind gc=g$pwc
				pw $v clone -q "${opt[@]}" --filter=$f "file://$S" "$pwc" 2>err ||
					{ not_ok "$w clone $kind --filter=$f"; cat err; continue; }
				g $v clone -q "${opt[@]}" --filter=$f "file://$S" "$gc" 2>/dev/null
				same_as_git "$w clone $kind --filter=$f" "$pwc" "$gc"
				check "$w clone $kind --filter=$f: promisor remote" \
					test "$(git -C "$pwc" config remote.origin.promisor)" = true
				check "$w clone $kind --filter=$f: partialclonefilter" \
					test "$(git -C "$pwc" config remote.origin.partialclonefilter)" = "$f"
				check "$w clone $kind --filter=$f: packs marked .promisor" \
					test "$(ls "$(gitdir "$pwc")"/objects/pack/*.promisor | wc -l)" = \
					"$(ls "$(gitdir "$pwc")"/objects/pack/*.pack | wc -l)"
				if [ -n "$(missing_of "$pwc")" ] && [ "$(missing_of "$pwc")" = "$(missing_of "$gc")" ]; then
					ok "$w clone $kind --filter=$f: the same objects left out as git"
				else
					not_ok "$w clone $kind --filter=$f: objects left out differ from git's"
				fi
				[ $kind = bare ] || check "$w clone --filter=$f: work tree clean" worktree_clean "$pwc"
			done
		done
		# a later fetch into the partial clone keeps the filter
		pwc=pf-$algo-$v-blob-none-wt gc=g$pwc
		(cd "$S" && echo "partial $v" >>big.txt && git commit -q -am "partial $v")
		(cd "$pwc" && pw $v fetch -q) 2>err || { not_ok "$w fetch into a partial clone"; cat err; }
		(cd "$gc" && g $v fetch -q) 2>/dev/null
		same_as_git "$w fetch into a partial clone" "$pwc" "$gc"
		check "$w fetch into a partial clone: still partial" test -n "$(missing_of "$pwc")"

		# ---- clone options ------------------------------------------------------
		pw $v clone -q --mirror "file://$S" "pm-$algo-$v.git"
		g $v clone -q --mirror "file://$S" "gm-$algo-$v.git"
		same_as_git "$w clone --mirror" "pm-$algo-$v.git" "gm-$algo-$v.git"
		check "$w clone --mirror: every server ref" same_refs "pm-$algo-$v.git" "$S"

		pw $v clone -q --branch topic --origin up "file://$S" "pb-$algo-$v"
		g $v clone -q --branch topic --origin up "file://$S" "gb-$algo-$v"
		same_as_git "$w clone --branch topic --origin up" "pb-$algo-$v" "gb-$algo-$v"
		check "$w clone --branch topic: on topic" \
			test "$(git -C "pb-$algo-$v" symbolic-ref HEAD)" = refs/heads/topic
		check "$w clone --branch topic: work tree clean" worktree_clean "pb-$algo-$v"
		check "$w clone --origin up: tracking refs under up/" \
			git -C "pb-$algo-$v" rev-parse -q --verify --quiet refs/remotes/up/main >/dev/null

		# a tag as --branch: detached HEAD at the tagged commit
		pw $v clone -q -b v0.1 "file://$S" "pt-$algo-$v" 2>/dev/null
		g $v clone -q -b v0.1 "file://$S" "gt-$algo-$v" 2>/dev/null
		same_as_git "$w clone -b <tag>" "pt-$algo-$v" "gt-$algo-$v"
		check "$w clone -b <tag>: work tree clean" worktree_clean "pt-$algo-$v"

		pw $v clone -q --no-checkout "file://$S" "pn-$algo-$v"
		g $v clone -q --no-checkout "file://$S" "gn-$algo-$v"
		same_as_git "$w clone --no-checkout" "pn-$algo-$v" "gn-$algo-$v"
		check "$w clone --no-checkout: no index, no files" \
			test ! -e "pn-$algo-$v/.git/index" -a ! -e "pn-$algo-$v/a.txt"

		pw $v clone -q --single-branch -b topic "file://$S" "ps-$algo-$v"
		g $v clone -q --single-branch -b topic "file://$S" "gs-$algo-$v"
		same_as_git "$w clone --single-branch -b topic" "ps-$algo-$v" "gs-$algo-$v"

		# ---- fetch --tags and negative refspecs --------------------------------
		pw $v clone -q "file://$S" "pf-$algo-$v"
		g $v clone -q "file://$S" "gf-$algo-$v"
		(cd "$S" && git tag -a "unrelated-$v" -m "tag on topic" topic && git tag "light-$v" HEAD~2)
		(cd "pf-$algo-$v" && pw $v fetch --tags) 2>pw.err || not_ok "$w fetch --tags: exit"
		(cd "gf-$algo-$v" && g $v fetch --tags) 2>git.err
		check "$w fetch --tags: refs as git" same_refs "pf-$algo-$v" "gf-$algo-$v"
		same_file "$w fetch --tags: FETCH_HEAD as git" "pf-$algo-$v/.git/FETCH_HEAD" "gf-$algo-$v/.git/FETCH_HEAD"
		same_file "$w fetch --tags: summary as git" pw.err git.err
		check "$w fetch --tags: fsck" fsck_ok "pf-$algo-$v"

		(cd "$S" && git branch -q "skip-$v" && git branch -q "keep-$v")
		(cd "pf-$algo-$v" && pw $v fetch origin '+refs/heads/*:refs/remotes/origin/*' "^refs/heads/skip-$v") 2>pw.err ||
			not_ok "$w negative refspec: exit"
		(cd "gf-$algo-$v" && g $v fetch origin '+refs/heads/*:refs/remotes/origin/*' "^refs/heads/skip-$v") 2>git.err
		check "$w negative refspec: refs as git" same_refs "pf-$algo-$v" "gf-$algo-$v"
		check "$w negative refspec: excluded branch not fetched" \
			test -z "$(git -C "pf-$algo-$v" for-each-ref "refs/remotes/origin/skip-$v")"
		same_file "$w negative refspec: FETCH_HEAD as git" "pf-$algo-$v/.git/FETCH_HEAD" "gf-$algo-$v/.git/FETCH_HEAD"
		same_file "$w negative refspec: summary as git" pw.err git.err
		# a negative glob
		(cd "pf-$algo-$v" && pw $v fetch origin 'refs/heads/*:refs/n/*' '^refs/heads/k*') 2>/dev/null
		(cd "gf-$algo-$v" && g $v fetch origin 'refs/heads/*:refs/n/*' '^refs/heads/k*') 2>/dev/null
		check "$w negative glob refspec: refs as git (tracking refs updated on the side too)" \
			same_refs "pf-$algo-$v" "gf-$algo-$v"
		same_file "$w negative glob refspec: FETCH_HEAD as git" "pf-$algo-$v/.git/FETCH_HEAD" "gf-$algo-$v/.git/FETCH_HEAD"
		check "$w negative glob refspec: k* excluded" \
			test -z "$(git -C "pf-$algo-$v" for-each-ref 'refs/n/k*')"

		# "fetch origin main": FETCH_HEAD, origin/main moves too, no tag followed
		(cd "$S" && echo "named $v" >>a.txt && git commit -q -am "named $v" && git tag -a "named-$v" -m named HEAD)
		(cd "pf-$algo-$v" && pw $v fetch origin main) 2>pw.err || not_ok "$w fetch origin main: exit"
		(cd "gf-$algo-$v" && g $v fetch origin main) 2>git.err
		check "$w fetch origin main: refs as git" same_refs "pf-$algo-$v" "gf-$algo-$v"
		check "$w fetch origin main: origin/main updated" test \
			"$(git -C "pf-$algo-$v" rev-parse origin/main)" = "$(git -C "$S" rev-parse main)"
		check "$w fetch origin main: no tag followed" test -z "$(git -C "pf-$algo-$v" for-each-ref "refs/tags/named-$v")"
		same_file "$w fetch origin main: FETCH_HEAD as git" "pf-$algo-$v/.git/FETCH_HEAD" "gf-$algo-$v/.git/FETCH_HEAD"
		same_file "$w fetch origin main: summary as git" pw.err git.err
		# storing into a ref follows the tag of a commit that is already here
		(cd "pf-$algo-$v" && pw $v fetch origin main:refs/k/main) 2>pw.err || not_ok "$w fetch main:refs/k/main: exit"
		(cd "gf-$algo-$v" && g $v fetch origin main:refs/k/main) 2>git.err
		check "$w fetch main:refs/k/main: refs as git" same_refs "pf-$algo-$v" "gf-$algo-$v"
		check "$w fetch main:refs/k/main: tag of a local commit followed" \
			test "$(git -C "pf-$algo-$v" cat-file -t "named-$v" 2>/dev/null)" = tag
		same_file "$w fetch main:refs/k/main: FETCH_HEAD as git" "pf-$algo-$v/.git/FETCH_HEAD" "gf-$algo-$v/.git/FETCH_HEAD"
		same_file "$w fetch main:refs/k/main: summary as git" pw.err git.err
		check "$w fetch main:refs/k/main: fsck" fsck_ok "pf-$algo-$v"
		# a URL and a branch: FETCH_HEAD only, no tags
		(cd "pf-$algo-$v" && pw $v fetch "file://$S" topic) 2>pw.err
		(cd "gf-$algo-$v" && g $v fetch "file://$S" topic) 2>git.err
		check "$w fetch URL topic: refs as git" same_refs "pf-$algo-$v" "gf-$algo-$v"
		same_file "$w fetch URL topic: FETCH_HEAD as git" "pf-$algo-$v/.git/FETCH_HEAD" "gf-$algo-$v/.git/FETCH_HEAD"
	done
done
# GIT_SSH (a program, not a shell command) is used when GIT_SSH_COMMAND is unset
printf '#!/bin/sh\necho "my-ssh $*" >>"%s/my-ssh.log"\nexec "%s" "$@"\n' "$T" "$FAKE_SSH" >"$T/bin/my-ssh"
chmod +x "$T/bin/my-ssh"
for algo in sha1 sha256; do
	env -u GIT_SSH_COMMAND GIT_SSH="$T/bin/my-ssh" "$PACKWIRE" ls-remote "ssh://localhost$T/srv-$algo" >pw.out
	git ls-remote "$T/srv-$algo" >git.out
	same_file "$algo: ls-remote through GIT_SSH" pw.out git.out
	contains "$algo: GIT_SSH ran" "$T/my-ssh.log" "localhost"
	env -u GIT_SSH_COMMAND GIT_SSH="$T/bin/my-ssh" "$PACKWIRE" clone -q --bare "localhost:$T/srv-$algo" "ssh-$algo.git" 2>err ||
		{ not_ok "$algo: clone through GIT_SSH (scp-like)"; cat err; }
	check "$algo: clone through GIT_SSH: refs" same_refs "ssh-$algo.git" "$T/srv-$algo"
	check "$algo: clone through GIT_SSH: fsck" fsck_ok "ssh-$algo.git"
done
finish
