# packwire cat-file and show-index print exactly what git prints, for loose
# and packed objects, idx v1 and v2, SHA-1 and SHA-256; damaged files give a
# clear error naming the file.
. "$(dirname "$0")/lib.sh"

# compare_batch NAME REPO: --batch / --batch-check over every object, and
# --batch-all-objects, byte-identical to git
compare_batch() {
	local name=$1 repo=$2
	all_objects "$repo" >"$T/list"
	(cd "$repo" && git cat-file --batch <"$T/list") >"$T/want"
	(cd "$repo" && "$PACKWIRE" cat-file --batch <"$T/list") >"$T/got"
	same_file "$name: --batch over $(wc -l <"$T/list") objects" "$T/want" "$T/got"
	(cd "$repo" && git cat-file --batch-check <"$T/list") >"$T/want"
	(cd "$repo" && "$PACKWIRE" cat-file --batch-check <"$T/list") >"$T/got"
	same_file "$name: --batch-check" "$T/want" "$T/got"
	(cd "$repo" && git cat-file --batch-all-objects --batch-check) >"$T/want"
	(cd "$repo" && "$PACKWIRE" cat-file --batch-all-objects --batch-check) >"$T/got"
	same_file "$name: --batch-all-objects --batch-check" "$T/want" "$T/got"
	(cd "$repo" && git cat-file --batch-all-objects --batch) >"$T/want"
	(cd "$repo" && "$PACKWIRE" cat-file --batch-all-objects --batch) >"$T/got"
	same_file "$name: --batch-all-objects --batch" "$T/want" "$T/got"
}

# compare_show_index NAME REPO ALGO: every idx of the repository
compare_show_index() {
	local name=$1 repo=$2 algo=$3 idx n=0 bad=0
	for idx in "$repo"/objects/pack/*.idx "$repo"/.git/objects/pack/*.idx; do
		[ -f "$idx" ] || continue
		n=$((n + 1))
		git show-index --object-format="$algo" <"$idx" >"$T/want"
		"$PACKWIRE" show-index --object-format="$algo" <"$idx" >"$T/got" || bad=1
		cmp -s "$T/want" "$T/got" || bad=1
		# inside the repository the format comes from it
		(cd "$repo" && "$PACKWIRE" show-index <"$idx") >"$T/got" || bad=1
		cmp -s "$T/want" "$T/got" || bad=1
	done
	check "$name: show-index on $n idx files" [ "$n" -gt 0 -a "$bad" = 0 ]
}

# idx_version FILE: 1 or 2
idx_version() {
	if [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' ')" = ff744f63 ]; then echo 2; else echo 1; fi
}

# repack_v1 SRC DST: a copy whose packs use idx version 1
repack_v1() {
	cp -r "$1" "$2"
	git -C "$2" -c pack.indexVersion=1 repack -q -a -d
	local idx
	for idx in "$2"/objects/pack/*.idx "$2"/.git/objects/pack/*.idx; do
		[ -f "$idx" ] || continue
		[ "$(idx_version "$idx")" = 1 ] || return 1
	done
}

# ---- real history: interop/t-cat-file/real --------------------------------
if real_part "cat-file and show-index on git v1.5.0"; then
	for algo in sha1 sha256; do
		d=$(data_repo small "$algo")
		compare_batch "$algo git v1.5.0" "$d"
		compare_show_index "$algo git v1.5.0" "$d" "$algo"
		if repack_v1 "$d" "$T/data-v1-$algo"; then
			compare_batch "$algo git v1.5.0 idx v1" "$T/data-v1-$algo"
			compare_show_index "$algo git v1.5.0 idx v1" "$T/data-v1-$algo" "$algo"
		else
			not_ok "$algo: could not make an idx v1 copy of the data repository"
		fi
		rm -rf "$T/data-v1-$algo"
	done
	finish
fi

for algo in sha1 sha256; do
	r=$T/repo-$algo
	make_repo "$r" "$algo" 2>/dev/null
	compare_batch "$algo small repo" "$r"
	compare_show_index "$algo idx v2" "$r" "$algo"

	# single-object modes
	for spec in HEAD HEAD^{tree} HEAD:a.txt HEAD:sub v0.1 HEAD:link; do
		oid=$(git -C "$r" rev-parse "$spec")
		for opt in -t -s -p; do
			git -C "$r" cat-file $opt "$oid" >"$T/want"
			(cd "$r" && "$PACKWIRE" cat-file $opt "$oid") >"$T/got" || true
			cmp -s "$T/want" "$T/got" || { not_ok "$algo cat-file $opt $spec"; continue 2; }
		done
	done
	ok "$algo cat-file -t/-s/-p on commits, trees, blobs, tags"
	git -C "$r" cat-file -p HEAD >"$T/want"
	(cd "$r/sub" && "$PACKWIRE" cat-file -p HEAD) >"$T/got"
	same_file "$algo cat-file -p HEAD from a subdirectory" "$T/want" "$T/got"
	(cd "$r" && "$PACKWIRE" cat-file blob "$(git rev-parse HEAD:a.txt)") >"$T/got"
	git -C "$r" cat-file blob HEAD:a.txt >"$T/want"
	same_file "$algo cat-file blob" "$T/want" "$T/got"
	check "$algo cat-file -e existing" bash -c "cd '$r' && '$PACKWIRE' cat-file -e HEAD"
	zero=$(git -C "$r" rev-parse HEAD | tr 0-9a-f 1)
	set +e
	(cd "$r" && "$PACKWIRE" cat-file -e "$zero")
	rc=$?
	(cd "$r" && "$PACKWIRE" cat-file -p "$zero") 2>"$T/err"
	rc2=$?
	set -e
	check "$algo cat-file -e missing exits 1" [ "$rc" = 1 ]
	check "$algo cat-file -p missing is fatal" [ "$rc2" = 128 ]
	printf 'HEAD\nv0.1\nmain\ntopic\nrefs/tags/v0.2\n' >"$T/in"
	(cd "$r" && git cat-file --batch <"$T/in") >"$T/want"
	(cd "$r" && "$PACKWIRE" cat-file --batch <"$T/in") >"$T/got"
	same_file "$algo --batch with ref names" "$T/want" "$T/got"
	git -C "$r" cat-file -p v0.2-annotated >"$T/want"
	(cd "$r" && "$PACKWIRE" cat-file -p v0.2-annotated) >"$T/got"
	same_file "$algo cat-file -p of a tag by name" "$T/want" "$T/got"
	printf '%s\nnot-an-object\n%s\n' "$zero" "$(git -C "$r" rev-parse HEAD)" >"$T/in"
	(cd "$r" && git cat-file --batch-check <"$T/in") >"$T/want"
	(cd "$r" && "$PACKWIRE" cat-file --batch-check <"$T/in") >"$T/got"
	same_file "$algo --batch-check with missing objects" "$T/want" "$T/got"

	# idx version 1
	if repack_v1 "$r" "$T/v1-$algo"; then
		compare_batch "$algo idx v1" "$T/v1-$algo"
		compare_show_index "$algo idx v1" "$T/v1-$algo" "$algo"
	else
		not_ok "$algo: could not make an idx v1 copy"
	fi
done

# ---- damaged files -------------------------------------------------------
# fails_naming NAME FILE-PATTERN COMMAND...: exits 128 (not a crash) and says
# which file is bad
fails_naming() {
	local name=$1 pattern=$2 rc
	shift 2
	set +e
	"$@" >/dev/null 2>"$T/err"
	rc=$?
	set -e
	if [ "$rc" != 128 ]; then
		not_ok "$name: exit $rc, want 128"
		sed 's/^/    /' "$T/err"
	else
		contains "$name" "$T/err" "$pattern"
	fi
}

for algo in sha1 sha256; do
	r=$T/repo-$algo
	packed=$(git -C "$r" rev-parse v0.1^{})
	idx=$(ls "$r"/.git/objects/pack/*.idx | head -1)
	pack=${idx%.idx}.pack

	b=$T/bad-idx-$algo
	cp -r "$r" "$b"
	truncate -s 1500 "$b/.git/objects/pack/$(basename "$idx")"
	fails_naming "$algo truncated idx" "$(basename "$idx")" \
		bash -c "cd '$b' && '$PACKWIRE' cat-file -p $packed"
	contains "$algo truncated idx says truncated" "$T/err" "truncated"

	b=$T/bad-pack-$algo
	cp -r "$r" "$b"
	bp=$b/.git/objects/pack/$(basename "$pack")
	chmod u+w "$bp"
	printf '\001' | dd of="$bp" bs=1 seek=$(($(stat -c %s "$bp") - 1)) conv=notrunc 2>/dev/null
	fails_naming "$algo pack checksum differs from idx" "$(basename "$pack")" \
		bash -c "cd '$b' && '$PACKWIRE' cat-file -p $packed"
	contains "$algo pack checksum message" "$T/err" "checksum"
	fails_naming "$algo --batch on a bad pack" "$(basename "$pack")" \
		bash -c "cd '$b' && echo $packed | '$PACKWIRE' cat-file --batch"

	# a loose object whose header claims 12 bytes but holds 10
	b=$T/bad-loose-$algo
	cp -r "$r" "$b"
	fake=$(printf 'ten bytes!' | git -C "$b" hash-object --stdin)
	mkdir -p "$b/.git/objects/${fake:0:2}"
	python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(b"blob 12\0ten bytes!"))' \
		>"$b/.git/objects/${fake:0:2}/${fake:2}"
	fails_naming "$algo loose object with a wrong size" "objects/${fake:0:2}/${fake:2}" \
		bash -c "cd '$b' && '$PACKWIRE' cat-file -p $fake"
	contains "$algo loose size message" "$T/err" "header says 12 bytes, inflated 10"
	python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(b"blub 10\0ten bytes!"))' \
		>"$b/.git/objects/${fake:0:2}/${fake:2}"
	fails_naming "$algo loose object with an unknown type" "${fake:2}" \
		bash -c "cd '$b' && '$PACKWIRE' cat-file -t $fake"
	python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(b"blob 10\0ten bytes!") + b"junk")' \
		>"$b/.git/objects/${fake:0:2}/${fake:2}"
	fails_naming "$algo loose object with trailing garbage" "${fake:2}" \
		bash -c "cd '$b' && echo $fake | '$PACKWIRE' cat-file --batch"
	fails_naming "$algo show-index on a truncated idx" "truncated" \
		bash -c "head -c 1100 '$idx' | '$PACKWIRE' show-index --object-format=$algo"
done
finish
