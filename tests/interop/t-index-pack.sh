# packwire index-pack against git index-pack: identical .idx files, --stdin
# into a repository, thin packs with --fix-thin, and every kind of bad pack.
. "$(dirname "$0")/lib.sh"

# no_leftovers DIR: no .idx, tmp_* or stray files beside the input
no_leftovers() {
	! ls "$1" | grep -qE '^tmp_|\.idx$|\.keep$'
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
	check "$algo: --verify accepts git's idx" \
		"$PACKWIRE" index-pack --object-format=$algo --verify -o "$d/git-v2.idx" "$d/p.pack"
done
finish
