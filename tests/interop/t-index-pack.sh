# packwire index-pack against git index-pack: identical .idx files, --stdin
# into a repository, thin packs with --fix-thin, and every kind of bad pack.
. "$(dirname "$0")/lib.sh"

# no_leftovers DIR: no .idx, tmp_* or stray files beside the input
no_leftovers() {
	! ls "$1" | grep -qE '^tmp_|\.idx$|\.keep$'
}
no_leftovers_tmp() {
	! ls "$1" | grep -qE '^tmp_'
}

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
	if need_data; then
		src=$(data_repo small $algo)
		spack=$(ls "$src"/objects/pack/*.pack | head -1)
		"$PACKWIRE" index-pack --object-format=$algo -o "$d/real.idx" "$spack" >/dev/null
		same_file "$algo: v1.5.0 history idx identical to git's" "${spack%.pack}.idx" "$d/real.idx"
		"$PACKWIRE" index-pack --object-format=$algo --threads=1 -o "$d/real1.idx" "$spack" >/dev/null
		same_file "$algo: same idx with one thread" "${spack%.pack}.idx" "$d/real1.idx"
	else
		skip "$algo: real history (no ../shared/data)"
	fi
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
	check "$algo $case: exit 128" [ $rc = 128 ] && [ $rc2 = 128 ]
	contains "$algo $case: message" "$dir/stderr" "$want"
	contains "$algo $case: message (--stdin)" "$dir/stderr2" "$want"
	check "$algo $case: nothing left behind" [ -z "$(ls "$dir/out")" ] && no_leftovers "$dir"
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
	# git agrees that these packs are broken
	check_fails "$algo: git rejects the truncated pack too" \
		git -C "$T/r-$algo" index-pack -o "$T/bad-$algo-truncated/g.idx" "$T/bad-$algo-truncated/x.pack" 2>/dev/null
done
finish
