# packwire verify-pack prints what git verify-pack prints, and fails on
# damaged packs and indexes. On git v1.5.0: interop/t-verify-pack/real.
. "$(dirname "$0")/lib.sh"

compare() { # compare ALGO REPO DESC
	local algo=$1 repo=$2 desc=$3 idx
	idx=$(cd "$repo/objects/pack" 2>/dev/null || cd "$repo/.git/objects/pack"; ls "$PWD"/*.idx | head -1)
	(cd "$(dirname "$idx")" && git verify-pack -v "$(basename "$idx")") >"$T/git-v.out"
	(cd "$(dirname "$idx")" && "$PACKWIRE" verify-pack -v "$(basename "$idx")") >"$T/pw-v.out"
	same_file "$desc: verify-pack -v output" "$T/git-v.out" "$T/pw-v.out"
	(cd "$(dirname "$idx")" && git verify-pack -s "$(basename "$idx")") >"$T/git-s.out"
	(cd "$(dirname "$idx")" && "$PACKWIRE" verify-pack -s "$(basename "$idx")") >"$T/pw-s.out"
	same_file "$desc: verify-pack -s output" "$T/git-s.out" "$T/pw-s.out"
	check "$desc: verify-pack (quiet) succeeds" "$PACKWIRE" verify-pack "$idx"
	check "$desc: explicit --object-format" "$PACKWIRE" verify-pack --object-format=$algo "$idx"
}

# ---- real history: interop/t-verify-pack/real ------------------------------
if real_part "verify-pack of git v1.5.0"; then
	for algo in sha1 sha256; do
		compare $algo "$(data_repo small $algo)" "$algo v1.5.0 history"
	done
	finish
fi

for algo in sha1 sha256; do
	make_repo "$T/r-$algo" "$algo" 2>/dev/null
	git -C "$T/r-$algo" repack -q -a -d
	compare $algo "$T/r-$algo" "$algo small repo"

	# damaged copies
	d=$T/bad-$algo
	mkdir -p "$d"
	pack=$(ls "$T/r-$algo"/.git/objects/pack/*.pack)
	cp "$pack" "$d/a.pack"; cp "${pack%.pack}.idx" "$d/a.idx"
	chmod u+w "$d"/*
	python3 - "$d/a.pack" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 0x55
open(p, 'wb').write(b)
PY
	set +e
	"$PACKWIRE" verify-pack -v "$d/a.idx" >"$d/out" 2>"$d/err"; rc=$?
	set -e
	check "$algo: damaged pack fails" [ $rc = 1 ]
	contains "$algo: damaged pack reported bad" "$d/out" "a.pack: bad"

	cp "$pack" "$d/b.pack"; cp "${pack%.pack}.idx" "$d/b.idx"
	chmod u+w "$d"/*
	python3 - "$d/b.idx" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[1100] ^= 0x01
open(p, 'wb').write(b)
PY
	check_fails "$algo: damaged idx fails" "$PACKWIRE" verify-pack "$d/b.idx" 2>"$d/err2"
	contains "$algo: damaged idx message" "$d/err2" "index checksum mismatch"
	check_fails "$algo: missing idx fails" "$PACKWIRE" verify-pack "$d/none.idx" 2>/dev/null
done
finish
