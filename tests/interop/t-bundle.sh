#!/usr/bin/env bash
# packwire bundle against stock git bundle, SHA-1 and SHA-256: packwire's
# bundles read by git (verify, list-heads, clone, fetch) and git's read by
# packwire (verify, list-heads, unbundle, clone, fetch, ls-remote); v2 and v3
# headers identical to git's; incremental bundles with prerequisites,
# ranges, --since and --max-count; "-" as stdout/stdin; fsck --strict, same
# refs and same objects after every transfer.
. "$(dirname "$0")/lib.sh"
P=$PACKWIRE

header() { sed '/^$/q' "$1"; }
# clone_both NAME BUNDLE: git clone and packwire clone of a bundle agree
clone_both() {
	local name=$1 b=$2
	rm -rf "gc-$name" "pc-$name"
	git clone -q "$b" "gc-$name" 2>/dev/null
	"$P" clone -q "$b" "pc-$name" 2>pc.err || { cat pc.err; return 1; }
	fsck_ok "pc-$name" && same_refs "gc-$name" "pc-$name" &&
		diff <(all_objects "gc-$name") <(all_objects "pc-$name") >/dev/null &&
		[ "$(git -C "pc-$name" rev-parse --show-object-format)" = "$3" ] &&
		[ "$(git -C "pc-$name" rev-parse HEAD)" = "$(git -C "gc-$name" rev-parse HEAD)" ]
}

cd "$T"
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo" >/dev/null 2>&1
	src=$T/src-$algo
	(
		cd "$src"
		git tag base HEAD~3
		"$P" bundle create -q "$T/pw-all-$algo.b" --all
		git bundle create -q "$T/git-all-$algo.b" --all
		"$P" bundle create -q "$T/pw-inc-$algo.b" base..main
		git bundle create -q "$T/git-inc-$algo.b" base..main
		"$P" bundle create -q "$T/pw-tags-$algo.b" main~1 v0.2 ^v0.1
		git bundle create -q "$T/git-tags-$algo.b" main~1 v0.2 ^v0.1
		"$P" bundle create -q - --all >"$T/pw-stdout-$algo.b"
	)
	for what in all inc tags; do
		header "pw-$what-$algo.b" >pw.h
		header "git-$what-$algo.b" >git.h
		same_file "$algo $what: header as git's" pw.h git.h
	done
	case $algo in
	sha1) contains "$algo: v2 by default" pw.h "# v2 git bundle" ;;
	sha256) contains "$algo: v3 with @object-format" pw.h "@object-format=sha256" ;;
	esac
	cmp -s "pw-stdout-$algo.b" "pw-all-$algo.b" && ok "$algo: create - writes the same bundle to stdout" ||
		not_ok "$algo: create - writes the same bundle to stdout"

	# packwire's bundles read by git
	for what in all inc tags stdout; do
		check "$algo $what: git bundle verify" git -C "$src" bundle verify -q "$T/pw-$what-$algo.b"
		git bundle list-heads "pw-$what-$algo.b" >git.lh
		"$P" bundle list-heads "pw-$what-$algo.b" >pw.lh
		same_file "$algo $what: list-heads as git" pw.lh git.lh
	done
	rm -rf "g-$algo"
	git clone -q "pw-all-$algo.b" "g-$algo" 2>/dev/null
	check "$algo: git clone of packwire's bundle passes fsck --strict" fsck_ok "g-$algo"
	check "$algo: and has every object of the source" \
		diff <(all_objects "$src") <(all_objects "g-$algo")

	# git's bundles read by packwire
	for what in all inc tags; do
		git -C "$src" bundle verify "$T/git-$what-$algo.b" >git.v 2>git.ve
		"$P" -C "$src" bundle verify "$T/git-$what-$algo.b" >pw.v 2>pw.ve
		same_file "$algo $what: verify output as git's" pw.v git.v
		same_file "$algo $what: verify's okay line as git's" pw.ve git.ve
		"$P" bundle list-heads - <"git-$what-$algo.b" >pw.lh
		git bundle list-heads "git-$what-$algo.b" >git.lh
		same_file "$algo $what: list-heads of stdin" pw.lh git.lh
		"$P" bundle list-heads "git-$what-$algo.b" refs/heads/main HEAD >pw.lh
		git bundle list-heads "git-$what-$algo.b" refs/heads/main HEAD >git.lh
		same_file "$algo $what: list-heads with refnames" pw.lh git.lh
		"$P" ls-remote "git-$what-$algo.b" >pw.ls
		git ls-remote "git-$what-$algo.b" >git.ls
		same_file "$algo $what: ls-remote of a bundle as git's" pw.ls git.ls
	done
	check "$algo: clone of git's full bundle as git clones it" clone_both "git-$algo" "git-all-$algo.b" "$algo"
	check "$algo: clone of packwire's full bundle as git clones it" clone_both "pw-$algo" "pw-all-$algo.b" "$algo"

	# unbundle into an empty repository: git's output, every object
	for maker in git pw; do
		rm -rf "u-$maker-$algo"
		git init -q --object-format=$algo "u-$maker-$algo"
		"$P" -C "u-$maker-$algo" bundle unbundle "$T/$maker-all-$algo.b" >pw.u
		git -C "src-$algo" bundle unbundle "$T/$maker-all-$algo.b" >git.u
		same_file "$algo: unbundle of $maker's bundle prints what git prints" pw.u git.u
		check "$algo: unbundle of $maker's bundle stores every object" \
			diff <(all_objects "$src") <(all_objects "u-$maker-$algo")
		check "$algo: unbundle of $maker's bundle passes fsck" git -C "u-$maker-$algo" fsck --strict --no-progress --no-dangling
	done

	# unbundle from a pipe: the header is read byte by byte, the pack follows
	rm -rf "pipe-$algo"
	git init -q --object-format=$algo "pipe-$algo"
	cat "git-all-$algo.b" | "$P" -C "pipe-$algo" bundle unbundle - >pw.u
	git -C "src-$algo" bundle list-heads "$T/git-all-$algo.b" >git.u
	same_file "$algo: unbundle - from a pipe" pw.u git.u
	check "$algo: unbundle - from a pipe stores every object" \
		diff <(all_objects "$src") <(all_objects "pipe-$algo")

	# v3 @filter: a promisor pack, incomplete on purpose
	{
		printf '# v3 git bundle\n@object-format=%s\n@filter=blob:none\n' $algo
		git -C "$src" rev-parse main | sed 's/$/ refs\/heads\/main/'
		echo
		git -C "$src" rev-parse main | git -C "$src" pack-objects -q --revs --stdout --filter=blob:none
	} >"filter-$algo.b"
	rm -rf "filter-$algo"
	git init -q --object-format=$algo "filter-$algo"
	check "$algo: unbundle of a @filter bundle" "$P" -C "filter-$algo" bundle unbundle "$T/filter-$algo.b"
	check "$algo: its pack is a promisor pack" test -n "$(ls "filter-$algo"/.git/objects/pack/*.promisor)"
	"$P" -C "filter-$algo" bundle verify "$T/filter-$algo.b" >pw.v 2>/dev/null
	contains "$algo: verify shows the filter" pw.v "The bundle uses this filter: blob:none"

	# incremental: a repository at `base` takes the bundle base..main
	for maker in git pw; do
		for reader in git pw; do
			r=inc-$maker-$reader-$algo
			rm -rf "$r"
			git init -q --object-format=$algo "$r"
			git -C "$r" fetch -q "$src" base:refs/heads/b0 2>/dev/null
			if [ $reader = pw ]; then
				"$P" -C "$r" fetch -q "$T/$maker-inc-$algo.b" main:refs/remotes/b/main
			else
				git -C "$r" fetch -q "$T/$maker-inc-$algo.b" main:refs/remotes/b/main
			fi
			check "$algo: $reader fetches $maker's incremental bundle" \
				test "$(git -C "$r" rev-parse refs/remotes/b/main)" = "$(git -C "$src" rev-parse main)"
			check "$algo: $reader's fetch of $maker's bundle passes fsck" fsck_ok "$r"
		done
	done
	# the prerequisite is missing: refused as git does, nothing stored
	git init -q --object-format=$algo "empty-$algo"
	check_fails "$algo: verify of an incremental bundle without its base" \
		"$P" -C "empty-$algo" bundle verify "$T/git-inc-$algo.b"
	"$P" -C "empty-$algo" bundle verify "$T/git-inc-$algo.b" 2>pw.e || true
	git -C "empty-$algo" bundle verify "$T/git-inc-$algo.b" 2>git.e || true
	same_file "$algo: missing prerequisites worded as git" pw.e git.e
	check_fails "$algo: unbundle without the base" "$P" -C "empty-$algo" bundle unbundle "$T/pw-inc-$algo.b"
	check_fails "$algo: fetch without the base" "$P" -C "empty-$algo" fetch -q "$T/pw-inc-$algo.b" main:refs/heads/x
	check "$algo: nothing stored" test -z "$(ls "empty-$algo/.git/objects/pack")"
	check_fails "$algo: clone of an incremental bundle" "$P" clone -q "pw-inc-$algo.b" "inc-clone-$algo"
	check "$algo: the failed clone left no directory" test ! -e "inc-clone-$algo"

	# --version
	(cd "$src" && "$P" bundle create -q --version=3 "$T/pw-v3-$algo.b" main &&
		git bundle create -q --version=3 "$T/git-v3-$algo.b" main)
	header "pw-v3-$algo.b" >pw.h
	header "git-v3-$algo.b" >git.h
	same_file "$algo: --version=3 header as git's" pw.h git.h
	check "$algo: git verifies the v3 bundle" git -C "$src" bundle verify -q "$T/pw-v3-$algo.b"
	if [ $algo = sha256 ]; then
		(cd "$src" && "$P" bundle create -q --version=2 "$T/v2-256.b" main 2>pw.e) || true
		contains "sha256: --version=2 refused as git" "$src/pw.e" \
			"cannot write bundle version 2 with algorithm sha256"
		check "sha256: and no file written" test ! -e "$T/v2-256.b"
	fi
	# an empty selection
	(cd "$src" && "$P" bundle create -q "$T/empty.b" main..main 2>pw.e) || true
	contains "$algo: empty bundle refused" "$src/pw.e" "Refusing to create empty bundle."
done

# --since and --max-count, over commits with fixed dates
git init -q dated
(
	cd dated
	for d in 1 2 3 4 5 6; do
		echo $d >f && git add f
		GIT_COMMITTER_DATE="2020-01-0$d 12:00:00 +0000" GIT_AUTHOR_DATE="2020-01-0$d 12:00:00 +0000" \
			git commit -q -m "day $d"
	done
	git branch old HEAD~4
)
for args in "--since=2020-01-04T11:00:00 main" "--since=@1578139200 main" "--max-count=2 main" \
	"-3 main" "--after=2020-01-03T13:00:00 --all" "--since=2020-01-04T13:00:00 old main"; do
	(cd dated && "$P" bundle create -q "$T/pw-d.b" $args 2>"$T/pw.e" &&
		git bundle create -q "$T/git-d.b" $args 2>"$T/git.e")
	header pw-d.b >pw.h
	header git-d.b >git.h
	same_file "bundle create $args: header as git's" pw.h git.h
	check "bundle create $args: git verifies it" git -C dated bundle verify -q "$T/pw-d.b"
done
same_file "excluded ref: warned as git" pw.e git.e

finish
