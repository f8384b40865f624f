#!/bin/bash
# Shallow fetches served by packwire upload-pack compared with stock git
# upload-pack: --depth, --deepen, --unshallow, --shallow-since,
# --shallow-exclude and an incremental fetch into a shallow clone, protocols
# v0 and v2, SHA-1 and SHA-256. Same shallow boundary, same objects, fsck.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

# same_state WHAT PW GIT
same_state() {
	local what=$1 pw=$2 g=$3
	if diff <(shallow_list "$pw") <(shallow_list "$g") >/dev/null; then ok "$what: same shallow boundary"
	else not_ok "$what: same shallow boundary"; diff <(shallow_list "$pw") <(shallow_list "$g") | head -5 || true; fi
	if diff <(all_objects "$pw") <(all_objects "$g") >/dev/null; then ok "$what: same objects"
	else not_ok "$what: same objects ($(all_objects "$pw" | wc -l) vs $(all_objects "$g" | wc -l))"; fi
	check "$what: fsck" fsck_ok "$pw"
}

for algo in sha1 sha256; do
	S=$T/src-$algo
	make_repo "$S" "$algo" 2>/dev/null
	# a longer history with dates spread out, for --shallow-since
	(cd "$S" && for i in 1 2 3 4 5 6; do
		echo "$i" >>hist.txt && git add hist.txt &&
			GIT_COMMITTER_DATE="$((1700000000 + i * 86400)) +0000" git commit -q -m "hist $i"
	done && git tag mark HEAD~3)
	url=file://$S
	for v in 0 2; do
		w="$algo v$v"
		G="git -c protocol.version=$v"
		pw=$T/pw-$algo-$v g=$T/git-$algo-$v
		$G clone -q --depth=2 --upload-pack="$UP" "$url" "$pw" 2>"$T/err" || { not_ok "$w: clone --depth=2"; cat "$T/err"; }
		$G clone -q --depth=2 "$url" "$g"
		same_state "$w: clone --depth=2" "$pw" "$g"

		$G -C "$pw" fetch -q --deepen=2 --upload-pack="$UP" 2>"$T/err" || { not_ok "$w: fetch --deepen=2"; cat "$T/err"; }
		$G -C "$g" fetch -q --deepen=2
		same_state "$w: fetch --deepen=2" "$pw" "$g"

		(cd "$S" && echo new >>a.txt && GIT_COMMITTER_DATE="$((1700000000 + 10 * 86400 + v)) +0000" git commit -q -am "new $v")
		$G -C "$pw" fetch -q --upload-pack="$UP" 2>"$T/err" || { not_ok "$w: fetch into a shallow clone"; cat "$T/err"; }
		$G -C "$g" fetch -q
		same_state "$w: incremental fetch into a shallow clone" "$pw" "$g"

		$G -C "$pw" fetch -q --depth=1 --upload-pack="$UP" 2>"$T/err" || { not_ok "$w: fetch --depth=1"; cat "$T/err"; }
		$G -C "$g" fetch -q --depth=1
		same_state "$w: fetch --depth=1 (shorter)" "$pw" "$g"

		$G -C "$pw" fetch -q --unshallow --upload-pack="$UP" 2>"$T/err" || { not_ok "$w: fetch --unshallow"; cat "$T/err"; }
		$G -C "$g" fetch -q --unshallow
		same_state "$w: fetch --unshallow" "$pw" "$g"
		check "$w: --unshallow leaves a complete repository" test ! -e "$pw/.git/shallow"

		rm -rf "$pw" "$g"
		$G clone -q --shallow-since=@$((1700000000 + 3 * 86400)) --upload-pack="$UP" "$url" "$pw" 2>"$T/err" ||
			{ not_ok "$w: clone --shallow-since"; cat "$T/err"; }
		$G clone -q --shallow-since=@$((1700000000 + 3 * 86400)) "$url" "$g"
		same_state "$w: clone --shallow-since" "$pw" "$g"

		rm -rf "$pw" "$g"
		$G clone -q --shallow-exclude=mark --upload-pack="$UP" "$url" "$pw" 2>"$T/err" ||
			{ not_ok "$w: clone --shallow-exclude"; cat "$T/err"; }
		$G clone -q --shallow-exclude=mark "$url" "$g"
		same_state "$w: clone --shallow-exclude" "$pw" "$g"

		rm -rf "$pw" "$g"
		$G clone -q --depth=1 --upload-pack="$UP" "$url" "$pw" 2>/dev/null
		$G clone -q --depth=1 "$url" "$g"
		$G -C "$pw" fetch -q --deepen=1 --upload-pack="$UP" 2>"$T/err" || { not_ok "$w: fetch --deepen=1"; cat "$T/err"; }
		$G -C "$g" fetch -q --deepen=1
		same_state "$w: fetch --deepen=1 (deepen-relative)" "$pw" "$g"
	done
done
finish
