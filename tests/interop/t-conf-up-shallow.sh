#!/bin/bash
# Serving FROM a shallow repository (issue 11, Git's t5537): packwire
# upload-pack honours the repository's own shallow file. Clones, fetches,
# --depth and --unshallow from a shallow clone give the same boundary and
# objects as stock git upload-pack, protocols v0 and v2, SHA-1 and SHA-256;
# the v0 advertisement lists the server's shallow commits. Also the thin
# shallow pack of "fetch --depth=1" after an empty commit (Git's t5500
# "fetch creating new shallow root"): only the new commit is sent.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

same_state() {
	local what=$1 pw=$2 g=$3
	if diff <(shallow_list "$pw") <(shallow_list "$g") >/dev/null; then ok "$what: same shallow boundary"
	else not_ok "$what: same shallow boundary"; diff <(shallow_list "$pw") <(shallow_list "$g") | head -5 || true; fi
	if diff <(all_objects "$pw") <(all_objects "$g") >/dev/null; then ok "$what: same objects"
	else not_ok "$what: same objects ($(all_objects "$pw" | wc -l) vs $(all_objects "$g" | wc -l))"; fi
	check "$what: fsck" fsck_ok "$pw"
}

for algo in sha1 sha256; do
	S=$T/src-$algo M=$T/mid-$algo
	make_repo "$S" "$algo" 2>/dev/null
	(cd "$S" && for i in 1 2 3 4; do echo "$i" >>hist.txt && git add hist.txt && git commit -q -m "hist $i"; done)
	# the shallow repository that serves
	git clone -q --no-local --depth=3 "file://$S" "$M"
	check "$algo: the serving repository is shallow" test -s "$M/.git/shallow"

	# v0 advertisement: "shallow <oid>" after the refs
	printf '0000' | "$PACKWIRE" upload-pack "$M" >"$T/adv" 2>/dev/null || true
	contains "$algo: v0 advertisement lists the server's shallow commits" "$T/adv" "shallow $(head -1 "$M/.git/shallow")"

	for v in 0 2; do
		w="$algo v$v"
		G="git -c protocol.version=$v"
		pw=$T/pw-$algo-$v g=$T/git-$algo-$v
		$G clone -q --no-local --upload-pack="$UP" "$M" "$pw" 2>"$T/err" || { not_ok "$w: clone from a shallow clone"; cat "$T/err"; }
		$G clone -q --no-local "$M" "$g"
		same_state "$w: clone from a shallow clone" "$pw" "$g"

		(cd "$M" && echo "more $v" >>hist.txt && git commit -q -am "more $v")
		$G -C "$pw" fetch -q --upload-pack="$UP" 2>"$T/err" || { not_ok "$w: fetch from a shallow clone"; cat "$T/err"; }
		$G -C "$g" fetch -q
		same_state "$w: fetch from a shallow clone" "$pw" "$g"

		$G -C "$pw" fetch -q --depth=1 --upload-pack="$UP" 2>"$T/err" || { not_ok "$w: fetch --depth=1"; cat "$T/err"; }
		$G -C "$g" fetch -q --depth=1
		same_state "$w: fetch --depth=1 from a shallow clone" "$pw" "$g"

		$G -C "$pw" fetch -q --unshallow --upload-pack="$UP" 2>"$T/err" || { not_ok "$w: fetch --unshallow"; cat "$T/err"; }
		$G -C "$g" fetch -q --unshallow
		same_state "$w: fetch --unshallow from a shallow clone" "$pw" "$g"
		rm -rf "$pw" "$g"
	done

	# a new shallow root whose tree the client has: one object in the pack
	c=$T/root-$algo
	git clone -q --no-local "$S" "$c"
	(cd "$S" && git commit -q --allow-empty -m empty)
	git -C "$c" fetch --depth=1 --progress --upload-pack="$UP" 2>"$T/prog" || true
	contains "$algo: fetch creating a new shallow root sends one object" "$T/prog" "Total 1 "
done
finish
