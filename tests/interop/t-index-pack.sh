# packwire index-pack against git index-pack: identical .idx files, --stdin
# into a repository, thin packs with --fix-thin, and every kind of bad pack.
# On git v1.5.0: interop/t-index-pack/real (with ../shared/data).
. "$(dirname "$0")/lib.sh"

# no_leftovers DIR: no .idx, tmp_* or stray files beside the input
no_leftovers() {
	! ls "$1" | grep -E '^tmp_|\.idx$|\.keep$' >/dev/null
}
no_leftovers_tmp() {
	! ls "$1" | grep -E '^tmp_' >/dev/null
}

# ---- real history: interop/t-index-pack/real ------------------------------
if real_part "index-pack of git v1.5.0"; then
	for algo in sha1 sha256; do
		src=$(data_repo small $algo)
		spack=$(ls "$src"/objects/pack/*.pack | head -1)
		d=$T/$algo
		mkdir -p "$d"
		"$PACKWIRE" index-pack --object-format=$algo -o "$d/real.idx" "$spack" >/dev/null
		same_file "$algo: v1.5.0 history idx identical to git's" "${spack%.pack}.idx" "$d/real.idx"
		"$PACKWIRE" index-pack --object-format=$algo --threads=1 -o "$d/real1.idx" "$spack" >/dev/null
		same_file "$algo: same idx with one thread" "${spack%.pack}.idx" "$d/real1.idx"
	done
	finish
fi

for algo in sha1 sha256; do
	make_repo "$T/r-$algo" "$algo"
	git -C "$T/r-$algo" repack -q -a -d
	pack=$(ls "$T/r-$algo"/.git/objects/pack/*.pack)
	d=$T/$algo
	mkdir -p "$d"
	cp "$pack" "$d/p.pack"
	for v in 1 2; do
		git -C "$T/r-$algo" index-pack --index-version=$v -o "$d/git-v$v.idx" "$d/p.pack" >"$d/git-v$v.out"
		"$PACKWIRE" index-pack --object-format=$algo --index-version=$v -o "$d/pw-v$v.idx" \
			"$d/p.pack" >"$d/pw-v$v.out"
		same_file "$algo: idx v$v identical to git's" "$d/git-v$v.idx" "$d/pw-v$v.idx"
		same_file "$algo: idx v$v printed checksum" "$d/git-v$v.out" "$d/pw-v$v.out"
	done
	git -C "$T/r-$algo" index-pack --index-version=2,0x100 -o "$d/git-large.idx" "$d/p.pack" >/dev/null
	"$PACKWIRE" index-pack --object-format=$algo --index-version=2,0x100 -o "$d/pw-large.idx" \
		"$d/p.pack" >/dev/null
	same_file "$algo: idx with forced 64-bit offsets identical" "$d/git-large.idx" "$d/pw-large.idx"
	check "$algo: --verify accepts git's idx" \
		"$PACKWIRE" index-pack --object-format=$algo --verify -o "$d/git-v2.idx" "$d/p.pack"

	# --stdin with an explicit pack path (no repository needed)
	mkdir -p "$d/stdin"
	"$PACKWIRE" index-pack --object-format=$algo --stdin --keep=held "$d/stdin/s.pack" \
		<"$d/p.pack" >"$d/stdin.out"
	check "$algo: --stdin copies the pack" cmp "$d/p.pack" "$d/stdin/s.pack"
	same_file "$algo: --stdin idx identical" "$d/git-v2.idx" "$d/stdin/s.idx"
	check "$algo: --stdin prints keep<TAB>hex" \
		[ "$(cat "$d/stdin.out")" = "keep	$(cat "$d/git-v2.out")" ]
	check "$algo: --keep=msg writes the .keep" [ "$(cat "$d/stdin/s.keep")" = held ]
	check "$algo: no temporary files after --stdin" no_leftovers_tmp "$d/stdin"

	# --stdin in a fresh repository: objects/pack/pack-<hex>.{pack,idx}
	git init -q --bare --object-format=$algo "$d/recv.git"
	(cd "$d/recv.git" && "$PACKWIRE" index-pack --stdin <"$d/p.pack") >"$d/recv.out"
	hex=$(cat "$d/git-v2.out")
	check "$algo: --stdin in a repository prints pack<TAB>hex" \
		[ "$(cat "$d/recv.out")" = "pack	$hex" ]
	# modes as git gives them: 0444 less the umask (packwire no longer
	# changes its umask to learn it)
	for um in 022 027 077; do
		git init -q --bare --object-format=$algo "$d/mode-git-$um.git"
		git init -q --bare --object-format=$algo "$d/mode-pw-$um.git"
		(umask $um && cd "$d/mode-git-$um.git" && git index-pack --stdin <"$d/p.pack" >/dev/null)
		(umask $um && cd "$d/mode-pw-$um.git" && "$PACKWIRE" index-pack --stdin <"$d/p.pack" >/dev/null)
		(cd "$d/mode-git-$um.git/objects/pack" && stat -c '%n %a' *) >"$d/mode-git-$um"
		(cd "$d/mode-pw-$um.git/objects/pack" && stat -c '%n %a' *) >"$d/mode-pw-$um"
		same_file "$algo: pack and idx modes as git's under umask $um" "$d/mode-git-$um" "$d/mode-pw-$um"
		# the pack writer (repack) and loose objects (a small push,
		# unpacked) too: 0444 less the umask, as git writes them
		for who in git pw; do
			git clone -q --bare "$T/r-$algo" "$d/rp-$who-$um.git"
			git init -q --bare --object-format=$algo "$d/lo-$who-$um.git"
		done
		(umask $um && git -C "$d/rp-git-$um.git" repack -q -a -d &&
			"$PACKWIRE" -C "$d/rp-pw-$um.git" repack -q -a -d)
		(umask $um && git -C "$T/r-$algo" push -q "$d/lo-git-$um.git" HEAD:refs/heads/main &&
			git -C "$T/r-$algo" push -q --receive-pack="'$PACKWIRE' receive-pack" \
				"$d/lo-pw-$um.git" HEAD:refs/heads/main)
		for who in git pw; do
			(cd "$d/rp-$who-$um.git/objects/pack" && stat -c '%a' *.pack *.idx | sort -u)
		done >"$d/rp-modes-$um"
		check "$algo: repack's pack and idx modes as git's under umask $um" \
			[ "$(sed -n 1p "$d/rp-modes-$um")" = "$(sed -n 2p "$d/rp-modes-$um")" ]
		for who in git pw; do
			find "$d/lo-$who-$um.git/objects" -type f -path '*/objects/??/*' \
				-printf '%m\n' | sort -u
		done >"$d/lo-modes-$um"
		check "$algo: loose object modes as git's under umask $um" \
			[ "$(sort -u "$d/lo-modes-$um" | wc -l)" = 1 ]
	done
	same_file "$algo: --stdin stored idx identical" "$d/git-v2.idx" \
		"$d/recv.git/objects/pack/pack-$hex.idx"
	check "$algo: --stdin objects readable by git" \
		[ "$(all_objects "$d/recv.git")" = "$(all_objects "$T/r-$algo")" ]
	check "$algo: git fsck clean after --stdin" fsck_ok "$d/recv.git"
	check "$algo: no temporary files in objects/pack" no_leftovers_tmp "$d/recv.git/objects/pack"
	check_fails "$algo: --stdin refuses the other algorithm" \
		sh -c "cd '$d/recv.git' && '$PACKWIRE' index-pack --stdin --object-format=$([ $algo = sha1 ] && echo sha256 || echo sha1) <'$d/p.pack' 2>/dev/null"
	check_fails "$algo: --stdin outside a repository needs a pack name" \
		sh -c "cd / && '$PACKWIRE' index-pack --stdin <'$d/p.pack' 2>/dev/null"
done

# --strict and --check-self-contained-and-connected
for algo in sha1 sha256; do
	d=$T/$algo
	check "$algo: --strict accepts a complete pack" \
		"$PACKWIRE" index-pack --object-format=$algo --strict -o "$d/strict.idx" "$d/p.pack"
	same_file "$algo: --strict writes the same idx" "$d/git-v2.idx" "$d/strict.idx"
	tip=$(git -C "$T/r-$algo" rev-parse HEAD~1)
	echo "$tip" | git -C "$T/r-$algo" pack-objects -q --stdout >"$d/tip.pack"
	set +e
	"$PACKWIRE" index-pack --object-format=$algo --check-self-contained-and-connected \
		-o "$d/tip.idx" "$d/tip.pack" >/dev/null 2>"$d/tip.err"
	rc=$?
	set -e
	check "$algo: a lone commit is not self-contained" [ $rc = 128 -a ! -e "$d/tip.idx" ]
	contains "$algo: ... and the message says so" "$d/tip.err" "not self-contained"
	check "$algo: without the check the lone commit is fine" \
		"$PACKWIRE" index-pack --object-format=$algo -o "$d/tip.idx" "$d/tip.pack"
	for c in bad-commit bad-tree dangling-tree; do
		python3 "$PW_SRC/tests/interop/badpack.py" $algo $c "$d/$c.pack"
		check "$algo $c: accepted without --strict" \
			"$PACKWIRE" index-pack --object-format=$algo -o "$d/$c.idx" "$d/$c.pack"
		rm -f "$d/$c.idx"
		set +e
		"$PACKWIRE" index-pack --object-format=$algo --strict "$d/$c.pack" >/dev/null 2>"$d/$c.err"
		rc=$?
		set -e
		check "$algo $c: rejected by --strict" [ $rc = 128 -a ! -e "$d/$c.idx" ]
	done
	contains "$algo: bad commit message" "$d/bad-commit.err" "commit"
	contains "$algo: bad tree message" "$d/bad-tree.err" "bad entry mode"
	contains "$algo: dangling tree message" "$d/dangling-tree.err" "not self-contained"
done

# thin packs: --fix-thin appends the missing bases from the repository, as git does
for algo in sha1 sha256; do
	d=$T/thin-$algo
	mkdir -p "$d"
	src=$T/r-$algo
	new=$(git -C "$src" rev-parse HEAD)
	old=$(git -C "$src" rev-parse HEAD~3)
	printf '%s\n^%s\n' "$new" "$old" | git -C "$src" pack-objects -q --revs --thin --stdout >"$d/thin.pack"
	echo "$old" | git -C "$src" pack-objects -q --revs --stdout >"$d/base.pack"
	for who in git pw; do
		git init -q --bare --object-format=$algo "$d/$who.git"
		git -C "$d/$who.git" index-pack --stdin <"$d/base.pack" >/dev/null
	done
	(cd "$d/git.git" && git index-pack --stdin --fix-thin <"$d/thin.pack") >"$d/git.out"
	(cd "$d/pw.git" && "$PACKWIRE" index-pack --stdin --fix-thin <"$d/thin.pack") >"$d/pw.out"
	same_file "$algo: --fix-thin prints the same pack name as git" "$d/git.out" "$d/pw.out"
	hex=$(cut -f2 "$d/git.out")
	same_file "$algo: --fix-thin pack identical to git's" "$d/git.git/objects/pack/pack-$hex.pack" \
		"$d/pw.git/objects/pack/pack-$hex.pack"
	same_file "$algo: --fix-thin idx identical to git's" "$d/git.git/objects/pack/pack-$hex.idx" \
		"$d/pw.git/objects/pack/pack-$hex.idx"
	check "$algo: objects after --fix-thin equal git's" \
		[ "$(all_objects "$d/pw.git")" = "$(all_objects "$d/git.git")" ]
	check "$algo: git fsck clean after --fix-thin" fsck_ok "$d/pw.git"
	# without the bases in the repository, or without --fix-thin: refused
	git init -q --bare --object-format=$algo "$d/empty.git"
	set +e
	(cd "$d/empty.git" && "$PACKWIRE" index-pack --stdin --fix-thin <"$d/thin.pack") >/dev/null 2>"$d/err1"
	rc1=$?
	(cd "$d/pw.git" && "$PACKWIRE" index-pack --stdin <"$d/thin.pack") >/dev/null 2>"$d/err2"
	rc2=$?
	set -e
	check "$algo: --fix-thin without the bases fails" [ $rc1 = 128 ]
	contains "$algo: ... saying the base is missing" "$d/err1" "nor in the repository"
	check "$algo: thin pack without --fix-thin fails" [ $rc2 = 128 ]
	contains "$algo: ... suggesting --fix-thin" "$d/err2" "needs --fix-thin"
	check "$algo: nothing left in objects/pack after the failures" \
		[ "$(ls "$d/empty.git/objects/pack" | wc -l)" = 0 ]
	# links to objects the repository has are fine
	tip=$(git -C "$src" rev-parse HEAD)
	echo "$tip" | git -C "$src" pack-objects -q --stdout >"$d/tip.pack"
	check "$algo: --check-self-contained-and-connected finds links in the repository" \
		sh -c "cd '$d/pw.git' && '$PACKWIRE' index-pack --stdin --check-self-contained-and-connected <'$d/tip.pack' >/dev/null"
done

# every kind of broken pack: exit 128, a message that names the problem, and
# nothing left behind (file mode and --stdin mode)
bad_case() {
	local algo=$1 case=$2 want=$3 dir=$T/bad-$algo-$2
	mkdir -p "$dir" "$dir/out"
	python3 "$PW_SRC/tests/interop/badpack.py" "$algo" "$case" "$dir/x.pack"
	set +e
	"$PACKWIRE" index-pack --object-format=$algo "$dir/x.pack" >"$dir/stdout" 2>"$dir/stderr"
	local rc=$?
	"$PACKWIRE" index-pack --object-format=$algo --stdin "$dir/out/y.pack" <"$dir/x.pack" \
		>/dev/null 2>"$dir/stderr2"
	local rc2=$?
	set -e
	check "$algo $case: exit 128 (file $rc, --stdin $rc2)" [ $rc = 128 -a $rc2 = 128 ]
	contains "$algo $case: message" "$dir/stderr" "$want"
	contains "$algo $case: message (--stdin)" "$dir/stderr2" "$want"
	check "$algo $case: nothing left behind" [ -z "$(ls "$dir/out")" ]
	check "$algo $case: no index or temporary file beside the input" no_leftovers "$dir"
}
for algo in sha1 sha256; do
	other=sha256; [ $algo = sha1 ] || other=sha1
	bad_case $algo truncated "pack is truncated"
	bad_case $algo bad-checksum "trailing checksum mismatch"
	bad_case $algo count-high "wrong object count in the header"
	bad_case $algo count-low "wrong object count in the header"
	bad_case $algo missing-base "unresolved delta"
	bad_case $algo ofs-outside "points outside the pack"
	bad_case $algo ofs-self "its own base"
	bad_case $algo ofs-middle "is not the start of an object"
	bad_case $algo delta-result-size "result is 81 bytes but the header says 86"
	bad_case $algo size-mismatch "inflates to 72 bytes but its header declares 75"
	bad_case $algo bomb "inflates to more than the 10 bytes its header declares"
	bad_case $algo bomb-delta "inflates to more than the 10 bytes its header declares"
	bad_case $algo bad-type "unknown object type 5"
	bad_case $algo duplicate "appears twice in the pack"
	bad_case $algo bad-zlib "corrupt zlib stream"
	bad_case $algo other-algo "try --object-format=$other"
	bad_case $algo other-algo-ofs "try --object-format=$other"
	bad_case $algo thin "needs --fix-thin"
	bad_case $algo many-one-bad "result is 84 bytes but the header says 85"
	# 200 deltas: several resolver threads, work splitting
	python3 "$PW_SRC/tests/interop/badpack.py" $algo many-good "$T/many-$algo.pack"
	git -C "$T/r-$algo" index-pack -o "$T/many-$algo.git.idx" "$T/many-$algo.pack" >/dev/null
	"$PACKWIRE" index-pack --object-format=$algo --threads=3 -o "$T/many-$algo.pw.idx" "$T/many-$algo.pack" >/dev/null
	same_file "$algo: 200-delta pack, 3 threads: idx identical" "$T/many-$algo.git.idx" "$T/many-$algo.pw.idx"
	# git agrees that these packs are broken
	check_fails "$algo: git rejects the truncated pack too" \
		git -C "$T/r-$algo" index-pack -o "$T/bad-$algo-truncated/g.idx" "$T/bad-$algo-truncated/x.pack" 2>/dev/null
done
finish
