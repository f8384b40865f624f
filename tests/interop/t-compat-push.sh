# packwire receive-pack --object-format=<the other algorithm>: stock git of
# one algorithm pushes into a repository stored in the other (its compat map
# built), for sha256 storage + sha1 clients and the reverse: new commits, a
# tag, a new branch, a deletion, a refused non-fast-forward, --atomic. The
# storage repository then holds the same history translated (its objects
# mapped through the map are exactly the client's, fsck --strict clean on
# both sides), serving it back in the client's algorithm gives exactly the
# pushed ids, a push that cannot be translated (gitlink of unknown id) is
# refused with nothing written, a receive-pack killed while it publishes a
# map file leaves a valid map, and native pushes, fetches and index-pack
# into the repository keep its map current.
. "$(dirname "$0")/lib.sh"

# state DIR: checksums of every file under objects/ and refs/, packed-refs
state() {
	(cd "$1" && find objects refs packed-refs -type f 2>/dev/null | LC_ALL=C sort |
		xargs -r sha256sum)
}
ids() { cut -d' ' -f1 | LC_ALL=C sort; }
# fsck of the storage repository by stock git (which refuses the extension:
# a copy without it)
fsck_storage() {
	rm -rf "$T/fsck.git"
	cp -r "$1" "$T/fsck.git"
	git config -f "$T/fsck.git/config" --unset extensions.compatobjectformat
	fsck_ok "$T/fsck.git"
}
verify_map() { "$PACKWIRE" -C "$1" compat verify >/dev/null; }
lookup() { "$PACKWIRE" -C "$1" compat lookup "$2"; }
has_id() { lookup "$@" >/dev/null; }
# stock git refuses the storage repository (the extension): packwire reads it
srev() { "$PACKWIRE" -C "$1" rev-parse --verify -q "$2"; }

run_case() {
	local S=$1 W=$2 d=$T/$1
	local UP="$PACKWIRE upload-pack --object-format=$W"
	local RP="$PACKWIRE receive-pack --object-format=$W"
	rm -rf "$d"
	mkdir -p "$d"
	make_repo "$d/work" "$S"
	git clone -q --bare "$d/work" "$d/srv.git"
	git -C "$d/srv.git" config receive.denyNonFastForwards true
	check "$S: compat build --object-format=$W" \
		"$PACKWIRE" -C "$d/srv.git" compat build -q --object-format="$W"

	# a stock client of the other algorithm, cloned through the compat view
	check "$S/$W: clone through upload-pack --object-format=$W" \
		git clone -q --upload-pack="$UP" "file://$d/srv.git" "$d/c"
	check "$S/$W: the clone is $W" [ "$(git -C "$d/c" rev-parse --show-object-format)" = "$W" ]
	(
		cd "$d/c"
		echo pushed >>a.txt && git commit -q -am "pushed one"
		mkdir -p newdir && echo new >newdir/f.txt && git add newdir && git commit -q -m "pushed two"
		git checkout -q -b side HEAD~1
		echo side >side.txt && git add side.txt && git commit -q -m "on side"
		git checkout -q main
		git merge -q --no-edit side -m "merge side"
		git tag -a v1.0 -m "pushed tag"
	)
	check "$S/$W: push commits, a tag and a new branch" \
		git -C "$d/c" push -q --receive-pack="$RP" origin main side v1.0
	for r in refs/heads/main refs/heads/side refs/tags/v1.0; do
		sv=$(srev "$d/srv.git" "$r")
		check "$S/$W: $r stored in $S, maps to the pushed id" \
			[ "$(lookup "$d/srv.git" "$sv")" = "$(git -C "$d/c" rev-parse "$r")" ]
	done
	check "$S/$W: the new pack has its side file" verify_map "$d/srv.git"

	# --advertise-refs (the HTTP backend's first request): ids and object-format in $W
	$RP --advertise-refs "$d/srv.git" >"$T/adv" </dev/null
	contains "$S/$W: --advertise-refs: object-format=$W" "$T/adv" "object-format=$W"
	contains "$S/$W: --advertise-refs: main in $W" "$T/adv" "$(git -C "$d/c" rev-parse main) refs/heads/main"
	# protocol v1 ("version 1" first)
	(cd "$d/c" && echo v1 >v1.txt && git add v1.txt && git commit -q -m "over v1")
	check "$S/$W: push over protocol v1" \
		git -C "$d/c" -c protocol.version=1 push -q --receive-pack="$RP" origin main
	check "$S/$W: v1 push maps" [ "$(lookup "$d/srv.git" "$(srev "$d/srv.git" main)")" = \
		"$(git -C "$d/c" rev-parse main)" ]

	check "$S/$W: delete a branch" git -C "$d/c" push -q --receive-pack="$RP" origin --delete topic
	check_fails "$S/$W: the branch is gone" srev "$d/srv.git" refs/heads/topic

	# non-fast-forward: refused by the server (receive.denyNonFastForwards)
	main_before=$(srev "$d/srv.git" main)
	git -C "$d/c" branch -q keep main
	git -C "$d/c" reset -q --hard HEAD~1
	(cd "$d/c" && echo rewritten >>a.txt && git commit -q -am "rewritten")
	check_fails "$S/$W: a forced non-fast-forward is refused" \
		git -C "$d/c" push -q -f --receive-pack="$RP" origin main 2>"$T/nff.err"
	contains "$S/$W: non-fast-forward named" "$T/nff.err" "non-fast-forward"
	check "$S/$W: main unchanged" [ "$(srev "$d/srv.git" main)" = "$main_before" ]

	# --atomic: one refused ref fails the other one too
	git -C "$d/c" branch -q atomic-new keep
	check_fails "$S/$W: --atomic with a refused ref fails" \
		git -C "$d/c" push -q -f --atomic --receive-pack="$RP" origin main atomic-new 2>"$T/atomic.err"
	check_fails "$S/$W: --atomic: the other ref was not created" \
		srev "$d/srv.git" refs/heads/atomic-new
	git -C "$d/c" reset -q --hard keep
	check "$S/$W: --atomic push of two refs" \
		git -C "$d/c" push -q --atomic --receive-pack="$RP" origin keep:refs/heads/kept atomic-new
	check "$S/$W: --atomic: both refs" [ "$(srev "$d/srv.git" kept)" = \
		"$(srev "$d/srv.git" atomic-new)" ]

	# the storage side: a stock $S clone (native packwire upload-pack) holds
	# the same history, mapped id for id
	check "$S/$W: stock $S mirror of the storage repository" \
		git clone -q --mirror --upload-pack="$PACKWIRE upload-pack" "file://$d/srv.git" "$d/s.git"
	check "$S/$W: fsck --strict of the $S mirror" fsck_ok "$d/s.git"
	check "$S/$W: fsck --strict of the storage repository" fsck_storage "$d/srv.git"
	check "$S/$W: $W mirror through the compat view" \
		git clone -q --mirror --upload-pack="$UP" "file://$d/srv.git" "$d/w.git"
	check "$S/$W: fsck --strict of the $W mirror" fsck_ok "$d/w.git"
	git -C "$d/s.git" rev-list --objects --all | ids |
		"$PACKWIRE" -C "$d/srv.git" compat lookup --stdin | LC_ALL=C sort >"$T/mapped"
	git -C "$d/w.git" rev-list --objects --all | ids >"$T/wire"
	same_file "$S/$W: rev-list --objects --all mapped through the map = the $W view" \
		"$T/wire" "$T/mapped"
	git -C "$d/c" rev-list --objects main side v1.0 keep | ids >"$T/pushed"
	check "$S/$W: every pushed object is served back with its $W id" \
		[ -z "$(LC_ALL=C comm -23 "$T/pushed" "$T/wire")" ]
	for r in main side v1.0 kept; do
		local want=$r
		[ "$r" = kept ] && want=keep
		check "$S/$W: served $r = pushed" \
			[ "$(git -C "$d/w.git" rev-parse "$r")" = "$(git -C "$d/c" rev-parse "$want")" ]
	done

	# a gitlink whose other id nobody knows: refused, nothing written
	(
		cd "$d/c"
		git checkout -q -b gl keep
		z=$(printf '%*s' "$(git rev-parse HEAD | wc -c)" '' | tr ' ' 1 | cut -c2-)
		git update-index --add --cacheinfo 160000,"$z",mod/sub
		git commit -q -m "gitlink"
	)
	state "$d/srv.git" >"$T/state.before"
	check_fails "$S/$W: a push with an untranslatable gitlink is refused" \
		git -C "$d/c" push -q --receive-pack="$RP" origin gl 2>"$T/gl.err"
	contains "$S/$W: the refusal names the gitlink" "$T/gl.err" "mod/sub"
	state "$d/srv.git" >"$T/state.after"
	same_file "$S/$W: refused push: refs, objects and map files unchanged" \
		"$T/state.before" "$T/state.after"
	git -C "$d/c" checkout -q keep

	# a pushed commit whose tree nobody has: refused naming it, nothing written
	z=$(git -C "$d/c" rev-parse HEAD | tr 0-9a-f 3)
	bad=$(printf 'tree %s\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n\nno tree\n' "$z" |
		git -C "$d/c" hash-object -t commit -w --literally --stdin)
	echo "$bad" | git -C "$d/c" pack-objects -q --stdout >"$T/bad.pack"
	python3 "$PW_SRC/tests/interop/push-req.py" --cmd "zero $bad refs/heads/broken" \
		--caps "report-status object-format=$W" --pack "$T/bad.pack" -- \
		$RP "$d/srv.git" >"$T/missing.out" 2>&1 || true
	contains "$S/$W: a missing object is named" "$T/missing.out" "$z (referenced by $bad) is missing"
	contains "$S/$W: missing object: unpack failed" "$T/missing.out" "unpack cannot translate"
	state "$d/srv.git" >"$T/state.after"
	same_file "$S/$W: missing object: refs, objects and map files unchanged" \
		"$T/state.before" "$T/state.after"

	# killed while publishing the pushed pack's side file: a valid map
	(cd "$d/c" && git checkout -q -b killed keep && echo k >k.txt && git add k.txt && git commit -q -m killed)
	check_fails "$S/$W: receive-pack killed at the map's publication" \
		git -C "$d/c" push -q --receive-pack="env PACKWIRE_TEST_COMPAT_KILL=1 $RP" origin killed 2>/dev/null
	check_fails "$S/$W: killed push: no ref" srev "$d/srv.git" refs/heads/killed
	check "$S/$W: killed push: the map verifies" verify_map "$d/srv.git"
	rm -rf "$d/srv.git/objects/tmp_objdir-incoming-"*
	check "$S/$W: the push again" git -C "$d/c" push -q --receive-pack="$RP" origin killed
	check "$S/$W: killed branch maps" [ "$(lookup "$d/srv.git" "$(srev "$d/srv.git" killed)")" = \
		"$(git -C "$d/c" rev-parse killed)" ]

	# a native push into the compat repository updates the map
	check "$S/$W: native $S clone" \
		git clone -q --upload-pack="$PACKWIRE upload-pack" "file://$d/srv.git" "$d/n"
	(cd "$d/n" && echo native >native.txt && git add native.txt && git commit -q -m native)
	check "$S/$W: native push" \
		git -C "$d/n" push -q --receive-pack="$PACKWIRE receive-pack" origin main:refs/heads/native
	nv=$(git -C "$d/n" rev-parse HEAD)
	# killed while publishing a native push's side file: valid map, no ref
	(cd "$d/n" && echo nk >nk.txt && git add nk.txt && git commit -q -m "native killed")
	state "$d/srv.git" >"$T/state.before"
	check_fails "$S/$W: native receive-pack killed at the map's publication" \
		git -C "$d/n" push -q --receive-pack="env PACKWIRE_TEST_COMPAT_KILL=1 $PACKWIRE receive-pack" \
		origin HEAD:refs/heads/native-killed 2>/dev/null
	check "$S/$W: killed native push: the map verifies" verify_map "$d/srv.git"
	rm -rf "$d/srv.git/objects/tmp_objdir-incoming-"*
	state "$d/srv.git" >"$T/state.after"
	same_file "$S/$W: killed native push: nothing changed" "$T/state.before" "$T/state.after"
	git -C "$d/n" reset -q --hard HEAD~1
	check "$S/$W: native push: the new commit has a $W id" has_id "$d/srv.git" "$nv"
	check "$S/$W: native push: the map verifies" verify_map "$d/srv.git"
	check "$S/$W: the $W view fetches the natively pushed branch" \
		git -C "$d/w.git" fetch -q --upload-pack="$UP" "file://$d/srv.git" '+refs/*:refs/*'
	check "$S/$W: fetched id = mapped id" \
		[ "$(git -C "$d/w.git" rev-parse native)" = "$(lookup "$d/srv.git" "$nv")" ]
	check "$S/$W: fsck --strict after the fetch" fsck_ok "$d/w.git"

	# a native push onto objects the map lacks (their side file gone, as
	# after a copy by a tool without the extension) maps them too, in
	# loose-object-idx, so the next push does not translate them again
	np=
	for i in "$d/srv.git"/objects/pack/*.idx; do
		"$PACKWIRE" show-index --object-format="$S" <"$i" | grep -q " $nv" && np=${i%.idx}
	done
	rm -f "$np.compat"
	check_fails "$S/$W: side file removed: the native commit has no $W id" has_id "$d/srv.git" "$nv"
	(cd "$d/n" && echo more >more.txt && git add more.txt && git commit -q -m more)
	check "$S/$W: native push onto unmapped objects" \
		git -C "$d/n" push -q --receive-pack="$PACKWIRE receive-pack" origin HEAD:refs/heads/native
	check "$S/$W: the unmapped commit has its $W id again" has_id "$d/srv.git" "$nv"
	check "$S/$W: in loose-object-idx" grep -q "^$nv " "$d/srv.git/objects/loose-object-idx"
	wc -l <"$d/srv.git/objects/loose-object-idx" >"$T/lines.before"
	(cd "$d/n" && echo again >again.txt && git add again.txt && git commit -q -m again)
	check "$S/$W: the next native push" \
		git -C "$d/n" push -q --receive-pack="$PACKWIRE receive-pack" origin HEAD:refs/heads/native
	wc -l <"$d/srv.git/objects/loose-object-idx" >"$T/lines.after"
	same_file "$S/$W: the next push translates nothing old again" "$T/lines.before" "$T/lines.after"
	check "$S/$W: map verifies after the unmapped objects" verify_map "$d/srv.git"

	# packwire fetch into the compat repository updates the map
	(cd "$d/work" && echo fetched >fetched.txt && git add fetched.txt && git commit -q -m fetched)
	fv=$(git -C "$d/work" rev-parse HEAD)
	check "$S/$W: packwire fetch into the compat repository" \
		"$PACKWIRE" -C "$d/srv.git" fetch -q "file://$d/work" refs/heads/main:refs/heads/fetched
	check "$S/$W: fetch: the new commit has a $W id" has_id "$d/srv.git" "$fv"

	# from a bundle too
	(cd "$d/work" && echo bundled >bundled.txt && git add bundled.txt && git commit -q -m bundled)
	bv=$(git -C "$d/work" rev-parse HEAD)
	git -C "$d/work" bundle create -q "$T/b.bundle" "$fv..main" 2>/dev/null
	check "$S/$W: packwire fetch from a bundle into the compat repository" \
		"$PACKWIRE" -C "$d/srv.git" fetch -q "$T/b.bundle" refs/heads/main:refs/heads/bundled
	check "$S/$W: bundle: the new commit has a $W id" has_id "$d/srv.git" "$bv"
	fv=$bv

	# packwire index-pack into it too
	(cd "$d/work" && echo ip >ip.txt && git add ip.txt && git commit -q -m ip)
	iv=$(git -C "$d/work" rev-parse HEAD)
	git -C "$d/work" rev-list --objects "$iv" --not "$fv" | ids |
		git -C "$d/work" pack-objects -q --stdout >"$T/ip.pack"
	check "$S/$W: index-pack --stdin into the compat repository" \
		sh -c "cd '$d/srv.git' && '$PACKWIRE' index-pack --stdin <'$T/ip.pack' >/dev/null"
	check "$S/$W: index-pack: the new commit has a $W id" has_id "$d/srv.git" "$iv"
	check "$S/$W: map verifies at the end" verify_map "$d/srv.git"

	# a repository without the extension refuses a push of the other algorithm
	check_fails "$S/$W: no compatObjectFormat: refused" \
		git -C "$d/c" push -q --receive-pack="$RP" "file://$d/work" keep:refs/heads/x 2>"$T/noext.err"
	contains "$S/$W: says why" "$T/noext.err" "compatObjectFormat"
}

run_case sha256 sha1
run_case sha1 sha256

finish
