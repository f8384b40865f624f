#!/bin/bash
# Repository, config and refs layers against stock git: packwire init makes
# repositories git works in; packwire reads the format and refs git writes;
# refs packwire writes are read by git; bad repositories give clear fatal
# errors (exit 128), never a crash.
. "$(dirname "$0")/lib.sh"

for algo in sha1 sha256; do
	d=$T/$algo
	mkdir -p "$d"

	# --- init ----------------------------------------------------------
	(cd "$d" && "$PACKWIRE" init --object-format=$algo pw >pw-init.out)
	(cd "$d" && git init -q --object-format=$algo git-made)
	echo "Initialized empty Git repository in $d/pw/.git/" >"$d/want-init.out"
	same_file "$algo: init message" "$d/want-init.out" "$d/pw-init.out"
	same_file "$algo: init config as git's" "$d/git-made/.git/config" "$d/pw/.git/config"
	same_file "$algo: init HEAD as git's" "$d/git-made/.git/HEAD" "$d/pw/.git/HEAD"
	(
		cd "$d/pw"
		echo one >f && git add f && git commit -q -m one
		echo two >>f && git commit -q -am two
		git tag -a t1 -m tag
	) || true
	check "$algo: git commits in a packwire-made repo, fsck clean" fsck_ok "$d/pw"
	[ "$(git -C "$d/pw" rev-parse --show-object-format)" = $algo ] &&
		ok "$algo: git sees object format $algo" || not_ok "$algo: git object format"
	"$PACKWIRE" init -q --bare --object-format=$algo "$d/bare.git" >"$d/q.out"
	[ ! -s "$d/q.out" ] && ok "$algo: init -q is quiet" || not_ok "$algo: init -q printed"
	git -C "$d/pw" push -q --mirror "$d/bare.git" 2>/dev/null
	check "$algo: git pushes into a packwire-made bare repo" fsck_ok "$d/bare.git"
	check "$algo: same refs after push" same_refs "$d/pw" "$d/bare.git"
	(cd "$d" && "$PACKWIRE" init -b trunk br >/dev/null)
	[ "$(cat "$d/br/.git/HEAD")" = "ref: refs/heads/trunk" ] && ok "$algo: init -b" ||
		not_ok "$algo: init -b"
	(cd "$d/pw" && "$PACKWIRE" init >"$d/reinit.out")
	contains "$algo: re-init" "$d/reinit.out" "Reinitialized existing Git repository in $d/pw/.git/"
	other=sha1; [ $algo = sha1 ] && other=sha256
	(cd "$d/pw" && "$PACKWIRE" init --object-format=$other 2>"$d/reinit.err") && rc=0 || rc=$?
	[ $rc = 128 ] && ok "$algo: re-init with another hash refused" || not_ok "$algo: re-init other hash rc=$rc"

	# --- rev-parse on a repo git made ------------------------------------
	r=$d/made
	make_repo "$r" $algo
	git clone -q --bare "$r" "$d/made.git"
	for dir in "$r" "$r/sub/deeper" "$r/.git" "$r/.git/refs" "$d/made.git" "$d/made.git/objects"; do
		for opt in --show-object-format --show-object-format=storage --git-dir --is-bare-repository; do
			(cd "$dir" && git rev-parse $opt) >"$d/want" 2>&1
			(cd "$dir" && "$PACKWIRE" rev-parse $opt) >"$d/got" 2>&1
			same_file "$algo: rev-parse $opt in ${dir#$d/}" "$d/want" "$d/got"
		done
	done
	revs="HEAD main topic v0.1 v0.2 v0.2-annotated refs/heads/main heads/topic tags/v0.1 @ $(git -C "$r" rev-parse HEAD~1)"
	(cd "$r" && git rev-parse $revs) >"$d/want"
	(cd "$r" && "$PACKWIRE" rev-parse $revs) >"$d/got"
	same_file "$algo: rev-parse revisions" "$d/want" "$d/got"
	(cd "$r" && git rev-parse --verify main) >"$d/want"
	(cd "$r" && "$PACKWIRE" rev-parse --verify main) >"$d/got"
	same_file "$algo: rev-parse --verify" "$d/want" "$d/got"
	(cd "$r" && "$PACKWIRE" rev-parse --verify nope 2>"$d/err") && rc=0 || rc=$?
	[ $rc = 128 ] && ok "$algo: rev-parse --verify of a missing ref: 128" || not_ok "$algo: --verify missing rc=$rc"
	(cd "$r" && "$PACKWIRE" rev-parse -q --verify nope 2>"$d/err") && rc=0 || rc=$?
	[ $rc = 1 ] && [ ! -s "$d/err" ] && ok "$algo: rev-parse -q --verify: 1, silent" || not_ok "$algo: -q --verify rc=$rc"

	# --- show-ref: loose, then packed ------------------------------------
	git -C "$r" update-ref refs/remotes/origin/main HEAD~1
	git -C "$r" symbolic-ref refs/remotes/origin/HEAD refs/remotes/origin/main
	for state in loose packed; do
		[ $state = packed ] && git -C "$r" pack-refs --all
		for args in "" "--head" "--tags" "--heads" "main" "v0.1 topic" "-s --heads" "--verify refs/heads/main refs/tags/v0.2" "--head --verify HEAD"; do
			(cd "$r" && git show-ref $args) >"$d/want" 2>&1 || true
			(cd "$r" && "$PACKWIRE" show-ref $args) >"$d/got" 2>&1 || true
			same_file "$algo: show-ref $args ($state)" "$d/want" "$d/got"
		done
	done
	(cd "$r" && git show-ref -d) >"$d/want"
	(cd "$r" && "$PACKWIRE" show-ref -d) >"$d/got"
	same_file "$algo: show-ref -d (packed, peeled)" "$d/want" "$d/got"
	(cd "$r" && "$PACKWIRE" show-ref nothing-like-this) && rc=0 || rc=$?
	[ $rc = 1 ] && ok "$algo: show-ref without match exits 1" || not_ok "$algo: show-ref no match rc=$rc"

	# --- refs written by packwire, read by git -----------------------------
	h1=$(git -C "$r" rev-parse HEAD~1)
	h0=$(git -C "$r" rev-parse HEAD)
	(cd "$r" && "$PACKWIRE" update-ref refs/heads/pw1 "$h1" && "$PACKWIRE" update-ref refs/heads/pw1 "$h0" "$h1" &&
		"$PACKWIRE" update-ref refs/tags/pwtag "$h1" "" && "$PACKWIRE" update-ref -d refs/tags/v0.1 &&
		"$PACKWIRE" update-ref -d refs/heads/topic "$(git rev-parse topic)")
	[ "$(git -C "$r" rev-parse refs/heads/pw1)" = "$h0" ] && ok "$algo: git reads a packwire ref" || not_ok "$algo: git reads pw1"
	! git -C "$r" show-ref -q refs/tags/v0.1 && ok "$algo: deleted packed tag gone for git" || not_ok "$algo: packed delete"
	! git -C "$r" show-ref -q refs/heads/topic && ok "$algo: deleted packed branch gone for git" || not_ok "$algo: packed branch delete"
	check "$algo: fsck after packwire ref updates" fsck_ok "$r"
	git -C "$r" for-each-ref --format='%(objectname) %(refname)' >"$d/want"
	(cd "$r" && "$PACKWIRE" show-ref) >"$d/got"
	same_file "$algo: git for-each-ref == packwire show-ref after updates" "$d/want" "$d/got"
	(cd "$r" && git show-ref -d) >"$d/want"
	(cd "$r" && "$PACKWIRE" show-ref -d) >"$d/got"
	same_file "$algo: packed-refs rewritten by packwire keeps peeled lines" "$d/want" "$d/got"

	# atomicity: one bad old value, nothing changes
	refs "$r" >"$d/before"
	printf 'create refs/heads/pw2 %s\nupdate refs/heads/main %s %s\ndelete refs/heads/pw1\n' "$h1" "$h1" "$h1" |
		(cd "$r" && "$PACKWIRE" update-ref --stdin 2>"$d/err") && rc=0 || rc=$?
	refs "$r" >"$d/after"
	[ $rc = 128 ] && ok "$algo: mismatching tx fails with 128" || not_ok "$algo: tx rc=$rc"
	same_file "$algo: failed tx changed nothing" "$d/before" "$d/after"
	contains "$algo: mismatch message" "$d/err" "cannot lock ref 'refs/heads/main': is at $h0 but expected $h1"
	[ -z "$(find "$r/.git" -name '*.lock')" ] && ok "$algo: no lock files left" || not_ok "$algo: lock files left"
	printf 'create refs/heads/pw2 %s\nupdate refs/heads/main %s %s\ndelete refs/heads/pw1\n' "$h1" "$h1" "$h0" |
		(cd "$r" && "$PACKWIRE" update-ref --stdin)
	[ "$(git -C "$r" rev-parse main pw2)" = "$h1
$h1" ] && ! git -C "$r" show-ref -q refs/heads/pw1 && ok "$algo: tx applied" || not_ok "$algo: tx applied"
	touch "$r/.git/refs/heads/pw2.lock"
	(cd "$r" && "$PACKWIRE" update-ref refs/heads/pw2 "$h0" 2>"$d/err") && rc=0 || rc=$?
	[ $rc = 128 ] && ok "$algo: held lock refused" || not_ok "$algo: held lock rc=$rc"
	contains "$algo: lock message" "$d/err" "pw2.lock"
	rm -f "$r/.git/refs/heads/pw2.lock"
	(cd "$r" && "$PACKWIRE" update-ref 'refs/heads/bad..name' "$h0" 2>"$d/err") && rc=0 || rc=$?
	[ $rc = 128 ] && ok "$algo: bad ref name refused" || not_ok "$algo: bad name rc=$rc"

	# --- broken repositories ------------------------------------------------
	for bad in syntax ext v2 md5 v0objfmt; do
		b=$d/bad-$bad
		cp -r "$d/made.git" "$b"
		case $bad in
		syntax) printf '[core\n' >>"$b/config"; want="bad config line" ;;
		ext) git --git-dir="$b" config core.repositoryformatversion 1
			git --git-dir="$b" config extensions.frobnicate yes; want=frobnicate ;;
		v2) git --git-dir="$b" config core.repositoryformatversion 2; want="found 2" ;;
		md5) git --git-dir="$b" config core.repositoryformatversion 1
			git --git-dir="$b" config extensions.objectformat md5; want=md5 ;;
		v0objfmt) git --git-dir="$b" config core.repositoryformatversion 0
			git --git-dir="$b" config extensions.objectformat $algo 2>/dev/null || true
			want=objectformat ;;
		esac
		for cmd in "rev-parse --show-object-format" "show-ref"; do
			(cd "$b" && "$PACKWIRE" $cmd >/dev/null 2>"$d/err") && rc=0 || rc=$?
			[ $rc = 128 ] && ok "$algo: $bad: $cmd exits 128" || not_ok "$algo: $bad: $cmd rc=$rc"
			contains "$algo: $bad: message names it" "$d/err" "$want"
		done
		(cd "$b" && git rev-parse --git-dir >/dev/null 2>&1) && rc=0 || rc=$?
		[ $rc = 128 ] && ok "$algo: $bad: git agrees it is broken" || not_ok "$algo: $bad: git rc=$rc"
	done
	(cd "$d/bad-syntax" && "$PACKWIRE" show-ref 2>"$d/err") || true
	contains "$algo: syntax error names file and line" "$d/err" "in file $d/bad-syntax/config"
done

# outside any repository
nr=$(mktemp -d /tmp/pw-not-a-repo.XXXXXX)
(cd "$nr" && "$PACKWIRE" rev-parse --git-dir 2>"$T/err") && rc=0 || rc=$?
rmdir "$nr"
[ $rc = 128 ] && ok "outside a repository: 128" || not_ok "outside a repository rc=$rc"
contains "outside a repository: message" "$T/err" "not a git repository (or any of the parent directories): .git"

# GIT_CEILING_DIRECTORIES: discovery stops below a ceiling, as in git
git init -q "$T/ceil" && mkdir -p "$T/ceil/a/b"
for ceil in "$T/ceil/a" "$T/ceil/a/" "$T/ceil" "/" "relative:$T/ceil/a" "$T/other"; do
	(cd "$T/ceil/a/b" && GIT_CEILING_DIRECTORIES=$ceil git rev-parse --git-dir) \
		>"$T/want" 2>/dev/null && wrc=0 || wrc=$?
	(cd "$T/ceil/a/b" && GIT_CEILING_DIRECTORIES=$ceil "$PACKWIRE" rev-parse --git-dir) \
		>"$T/got" 2>/dev/null && grc=0 || grc=$?
	check "GIT_CEILING_DIRECTORIES=$ceil: exit $wrc as git" [ $wrc = $grc ]
	same_file "GIT_CEILING_DIRECTORIES=$ceil: same answer as git" "$T/want" "$T/got"
done

# -c, GIT_CONFIG_PARAMETERS and GIT_CONFIG_COUNT reach every command's
# repository config, as with git (the upload-pack advertisement shows it)
for algo in sha1 sha256; do
	make_repo "$T/cfg-$algo" $algo
	adv() { # WHO VERSION ARGS...: advertisement without agent and pkt lengths
		local who=$1 v=$2; shift 2
		GIT_PROTOCOL=version=$v $who "$@" upload-pack --advertise-refs "$T/cfg-$algo" |
			tr '\0' '\n' | sed 's/^....//; s/agent=[^ ]*//'
	}
	for v in 0 2; do
		for c in "" "-c uploadpack.allowFilter=true" "-c uploadpack.allowFilter" \
			"-c uploadpack.allowTipSHA1InWant=true -c uploadpack.allowFilter=1"; do
			# shellcheck disable=SC2086
			adv git $v $c >"$T/want"
			# shellcheck disable=SC2086
			adv "$PACKWIRE" $v $c >"$T/got"
			same_file "$algo v$v: advertisement with '${c:-no -c}' as git" "$T/want" "$T/got"
		done
		GIT_CONFIG_PARAMETERS="'uploadpack.allowfilter'='true' 'uploadpack.allowTipSHA1InWant=true'" \
			adv git $v >"$T/want"
		GIT_CONFIG_PARAMETERS="'uploadpack.allowfilter'='true' 'uploadpack.allowTipSHA1InWant=true'" \
			adv "$PACKWIRE" $v >"$T/got"
		same_file "$algo v$v: GIT_CONFIG_PARAMETERS as git" "$T/want" "$T/got"
		GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=uploadpack.allowFilter GIT_CONFIG_VALUE_0=yes \
			adv git $v >"$T/want"
		GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=uploadpack.allowFilter GIT_CONFIG_VALUE_0=yes \
			adv "$PACKWIRE" $v >"$T/got"
		same_file "$algo v$v: GIT_CONFIG_COUNT as git" "$T/want" "$T/got"
		contains "$algo v$v: filter advertised with GIT_CONFIG_COUNT" "$T/got" filter
	done
	(cd "$T/cfg-$algo" && GIT_CONFIG_PARAMETERS="'unterminated" "$PACKWIRE" rev-parse --git-dir) \
		>/dev/null 2>"$T/err" && rc=0 || rc=$?
	check "$algo: malformed GIT_CONFIG_PARAMETERS: exit 128" [ $rc = 128 ]
	contains "$algo: malformed GIT_CONFIG_PARAMETERS: message" "$T/err" "GIT_CONFIG_PARAMETERS"
done

finish
