# packwire rev-list and pack-objects against stock git: same object sets,
# packs that git index-pack --strict / verify-pack accept, sizes close to
# git's, thin packs completed by index-pack --fix-thin.
. "$(dirname "$0")/lib.sh"

# oids of a "git rev-list --objects" style listing, sorted
oids() { cut -d' ' -f1 "$1" | sort; }
# object ids stored in a pack, sorted (via its idx)
pack_oids() { git show-index --object-format="$2" <"$1" | cut -d' ' -f2 | sort; }
size() { wc -c <"$1" | tr -d ' '; }

# index-pack --strict in an empty repository, then verify-pack
check_pack() { # WHAT ALGO PACK WANTED-OIDS-FILE
	local what=$1 algo=$2 pack=$3 want=$4 e
	e=$T/empty-$RANDOM
	git init -q --bare --object-format="$algo" "$e"
	cp "$pack" "$e/objects/pack/p.pack"
	if (cd "$e" && git index-pack --strict -o objects/pack/p.idx objects/pack/p.pack >/dev/null 2>"$T/ip.err"); then
		ok "$what: git index-pack --strict"
	else
		not_ok "$what: git index-pack --strict"
		sed 's/^/    /' "$T/ip.err" | head -5 || true
		return
	fi
	check "$what: git verify-pack" git -C "$e" verify-pack "objects/pack/p.idx"
	pack_oids "$e/objects/pack/p.idx" "$algo" >"$T/got.oids"
	same_file "$what: exactly the requested objects" "$want" "$T/got.oids"
	rm -rf "$e"
}

# --- real history: sizes against git, with and without delta reuse ----------
# (interop/t-pack-objects/real)
if real_part "pack-objects sizes on git v1.5.0"; then
	for algo in sha1 sha256; do
		D=$(data_repo small "$algo")
		git -C "$D" rev-list --objects --all >"$T/dlist"
		oids "$T/dlist" >"$T/dwant.oids"
		git -C "$D" rev-list --objects main~400..main >"$T/drange"
		(cd "$D" && "$PACKWIRE" rev-list --objects main~400..main) >"$T/pw.drange"
		same_file "$algo v1.5.0: rev-list --objects main~400..main same objects" <(oids "$T/drange") <(oids "$T/pw.drange")
		for mode in "" "--no-reuse-delta"; do
			# shellcheck disable=SC2086
			git -C "$D" pack-objects --stdout --delta-base-offset --window=10 --depth=50 -q $mode <"$T/dlist" >"$T/g.pack"
			s=$(date +%s.%N)
			# shellcheck disable=SC2086
			(cd "$D" && "$PACKWIRE" pack-objects --stdout --delta-base-offset --window=10 --depth=50 -q $mode <"$T/dlist" >"$T/p.pack")
			e=$(date +%s.%N)
			gs=$(size "$T/g.pack") ps=$(size "$T/p.pack")
			ratio=$(awk -v a="$ps" -v b="$gs" 'BEGIN{printf "%.3f", a/b}')
			echo "# $algo v1.5.0 pack-objects ${mode:-(reuse)}: packwire $ps bytes, git $gs bytes, ratio $ratio ($(awk -v a="$s" -v b="$e" 'BEGIN{printf "%.1f", b-a}') s)"
			check "$algo v1.5.0 ${mode:-reuse}: size within 15% of git's (ratio $ratio)" \
				awk -v r="$ratio" 'BEGIN{exit !(r <= 1.15)}'
			check_pack "$algo v1.5.0 ${mode:-reuse}" "$algo" "$T/p.pack" "$T/dwant.oids"
		done
	done
	finish
fi

for algo in sha1 sha256; do
	R=$T/repo-$algo
	make_repo "$R" "$algo"

	# --- rev-list -------------------------------------------------------
	for revs in "--all" "main" "main ^v0.1" "v0.1..topic" "main --not topic" "v0.2-annotated"; do
		# shellcheck disable=SC2086
		git -C "$R" rev-list --objects $revs >"$T/git.rl"
		# shellcheck disable=SC2086
		if (cd "$R" && "$PACKWIRE" rev-list --objects $revs >"$T/pw.rl"); then
			same_file "$algo rev-list --objects $revs: same objects" <(sort "$T/git.rl") <(sort "$T/pw.rl")
		else
			not_ok "$algo rev-list --objects $revs failed"
		fi
		# shellcheck disable=SC2086
		git -C "$R" rev-list $revs | sort >"$T/git.c"
		# shellcheck disable=SC2086
		(cd "$R" && "$PACKWIRE" rev-list $revs) | sort >"$T/pw.c"
		same_file "$algo rev-list $revs: same commits" "$T/git.c" "$T/pw.c"
	done
	# trees nested deeper than the walk's first 16 buffers (a walk one
	# level down grew the array under its caller: use after free)
	D=$T/deep-$algo
	git init -q --object-format="$algo" "$D"
	mkdir -p "$D/$(printf 'd%d/' $(seq 1 40))"
	echo deep >"$D/$(printf 'd%d/' $(seq 1 40))f"
	echo top >"$D/top"
	git -C "$D" add . && git -C "$D" -c user.name=A -c user.email=a@example.com commit -qm deep
	git -C "$D" rev-list --objects --all | sort >"$T/git.rl"
	if (cd "$D" && "$PACKWIRE" rev-list --objects --all >"$T/pw.rl"); then
		same_file "$algo rev-list --objects: trees 40 deep" "$T/git.rl" <(sort "$T/pw.rl")
	else
		not_ok "$algo rev-list --objects: trees 40 deep failed"
	fi
	want=$(git -C "$R" rev-list --count --all)
	got=$(cd "$R" && "$PACKWIRE" rev-list --count --all)
	check "$algo rev-list --count" [ "$want" = "$got" ]
	got=$(cd "$R" && printf 'main\n^v0.1\n' | "$PACKWIRE" rev-list --objects --stdin | sort | md5sum)
	want=$(git -C "$R" rev-list --objects main ^v0.1 | sort | md5sum)
	check "$algo rev-list --stdin" [ "$want" = "$got" ]

	# --- pack-objects from an object list ---------------------------------
	git -C "$R" rev-list --objects --all >"$T/list"
	oids "$T/list" >"$T/want.oids"
	(cd "$R" && "$PACKWIRE" pack-objects --stdout --delta-base-offset -q <"$T/list" >"$T/pw.pack")
	check_pack "$algo list, reuse" "$algo" "$T/pw.pack" "$T/want.oids"
	(cd "$R" && "$PACKWIRE" pack-objects --stdout -q --no-reuse-object <"$T/list" >"$T/pw2.pack")
	check_pack "$algo list, no reuse, REF_DELTA" "$algo" "$T/pw2.pack" "$T/want.oids"

	# --- --revs into BASE-NAME files, idx identical to git's ---------------
	mkdir -p "$T/out-$algo"
	hex=$(cd "$R" && "$PACKWIRE" pack-objects --revs --all --delta-base-offset -q "$T/out-$algo/pack" </dev/null)
	if [ -f "$T/out-$algo/pack-$hex.pack" ] && [ -f "$T/out-$algo/pack-$hex.idx" ]; then
		ok "$algo pack-objects BASE-NAME writes pack-<hex>.pack/.idx"
		pack_oids "$T/out-$algo/pack-$hex.idx" "$algo" >"$T/got.oids"
		same_file "$algo --revs --all: the objects of rev-list --objects --all" "$T/want.oids" "$T/got.oids"
		git init -q --bare --object-format="$algo" "$T/ip-$algo"
		(cd "$T/ip-$algo" && git index-pack -o "$T/git.idx" "$T/out-$algo/pack-$hex.pack" >"$T/ip.out")
		same_file "$algo our .idx is byte-identical to git index-pack's" "$T/git.idx" "$T/out-$algo/pack-$hex.idx"
		check "$algo pack name is the pack checksum" grep -qx "$hex" "$T/ip.out"
		check "$algo git verify-pack on BASE-NAME output" git -C "$R" verify-pack "$T/out-$algo/pack-$hex.idx"
	else
		not_ok "$algo pack-objects BASE-NAME output missing ($hex)"
	fi
	hex1=$(cd "$R" && "$PACKWIRE" pack-objects --revs --all --index-version=1 -q "$T/out-$algo/v1" </dev/null)
	(cd "$T/ip-$algo" && git index-pack --index-version=1 -o "$T/git1.idx" "$T/out-$algo/v1-$hex1.pack" >/dev/null)
	same_file "$algo --index-version=1 idx identical to git's" "$T/git1.idx" "$T/out-$algo/v1-$hex1.idx"

	# --- thin pack: new..^old completed by index-pack --fix-thin ----------
	printf 'main\n^v0.1\n' >"$T/thin.in"
	(cd "$R" && "$PACKWIRE" pack-objects --revs --thin --stdout --delta-base-offset -q <"$T/thin.in" >"$T/thin.pack")
	(cd "$R" && "$PACKWIRE" pack-objects --revs --stdout --delta-base-offset -q <"$T/thin.in" >"$T/full.pack")
	check "$algo thin pack is smaller than the full one ($(size "$T/thin.pack") < $(size "$T/full.pack"))" \
		[ "$(size "$T/thin.pack")" -lt "$(size "$T/full.pack")" ]
	C=$T/clone-$algo
	git init -q --bare --object-format="$algo" "$C"
	git -C "$C" fetch -q "$R" refs/tags/v0.1:refs/tags/v0.1
	if git -C "$C" index-pack --fix-thin --stdin <"$T/thin.pack" >/dev/null 2>"$T/fix.err"; then
		ok "$algo index-pack --fix-thin accepts the thin pack"
	else
		not_ok "$algo index-pack --fix-thin"
		sed 's/^/    /' "$T/fix.err" | head -5 || true
	fi
	git -C "$C" update-ref refs/heads/main "$(git -C "$R" rev-parse main)"
	check "$algo clone completed by the thin pack: fsck clean" fsck_ok "$C"
	check "$algo full pack of main ^v0.1 accepted by index-pack --strict" \
		sh -c "git -C '$C' index-pack --strict --stdin <'$T/full.pack' >/dev/null"

	# --- errors -------------------------------------------------------------
	B=$T/broken-$algo
	cp -r "$R" "$B"
	blob=$(git -C "$B" rev-parse HEAD:loose.txt)
	rm -f "$B/.git/objects/${blob:0:2}/${blob:2}"
	if (cd "$B" && "$PACKWIRE" rev-list --objects --all >/dev/null 2>"$T/err"); then
		not_ok "$algo rev-list with a missing blob should fail"
	else
		contains "$algo rev-list names the missing blob" "$T/err" "missing blob $blob"
	fi
	check_fails "$algo pack-objects of a missing object fails" \
		sh -c "cd '$B' && echo $blob | '$PACKWIRE' pack-objects --stdout -q >/dev/null 2>&1"
	check_fails "$algo rev-list of an unknown rev fails" \
		sh -c "cd '$R' && '$PACKWIRE' rev-list nosuchref >/dev/null 2>&1"
done

finish
