# packwire upload-pack --object-format=<the other algorithm>: a repository
# stored in one algorithm, its compat map built, serves stock git clients of
# the other algorithm (protocol v0 and v2): the clone is exactly the copy of
# the history that stock git writes in that algorithm (fast-export |
# fast-import), an incremental fetch after new commits too, and the reverse
# direction (SHA-1 storage served as SHA-256).
. "$(dirname "$0")/lib.sh"

objects_of() { git -C "$1" rev-list --objects --all | sort; }
# the remote's refs as the clone names them (a mirror clone keeps the names)
src_refs() { git -C "$1" for-each-ref --format='%(objectname) %(refname)' refs/heads refs/tags | sort; }

# same_copy DESC CLONE COPY: same refs, same objects, fsck --strict clean
same_copy() {
	local desc=$1 a=$2 b=$3
	src_refs "$a" >"$T/a.refs"
	src_refs "$b" >"$T/b.refs"
	same_file "$desc: refs" "$T/b.refs" "$T/a.refs"
	objects_of "$a" >"$T/a.objs"
	objects_of "$b" >"$T/b.objs"
	same_file "$desc: rev-list --objects --all" "$T/b.objs" "$T/a.objs"
	check "$desc: fsck --strict" fsck_ok "$a"
}

# copy_history SRC DST ALGO: DST gets SRC's history written by stock git in ALGO
copy_history() {
	rm -rf "$2"
	git init -q --bare --object-format="$3" "$2"
	git -C "$1" fast-export --all --signed-tags=strip | git -C "$2" fast-import --quiet
}

# ---- SHA-256 storage, SHA-1 clients ----------------------------------
make_repo "$T/s256" sha256
git -C "$T/s256" tag -d v0.2-annotated >/dev/null # fast-export cannot carry a tag of a tag
copy_history "$T/s256" "$T/s1" sha1
check "compat build sha256 -> sha1" "$PACKWIRE" -C "$T/s256" compat build -q

UP="$PACKWIRE upload-pack --object-format=sha1"
for v in 2 0; do
	rm -rf "$T/c$v"
	check "v$v: stock git (sha1) clones the sha256 repository" \
		git -c protocol.version=$v clone -q --mirror --upload-pack="$UP" "file://$T/s256" "$T/c$v"
	check "v$v: the clone is sha1" [ "$(git -C "$T/c$v" rev-parse --show-object-format)" = sha1 ]
	same_copy "v$v clone" "$T/c$v" "$T/s1"
	# the translated pack has deltas: blobs' reused, trees' searched anew
	git -C "$T/c$v" verify-pack -v "$T/c$v"/objects/pack/*.idx >"$T/vp$v"
	check "v$v: the pack has blob deltas" grep -qE '^[0-9a-f]{40} blob +[0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9a-f]{40}$' "$T/vp$v"
	check "v$v: the pack has tree deltas" grep -qE '^[0-9a-f]{40} tree +[0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9a-f]{40}$' "$T/vp$v"
done
check "v2: HEAD symref" [ "$(git -C "$T/c2" symbolic-ref HEAD)" = refs/heads/main ]

# ls-remote shows the sha1 ids, peeled tags included
git -c protocol.version=0 ls-remote --upload-pack="$UP" "file://$T/s256" >"$T/ls0"
git -c protocol.version=2 ls-remote --upload-pack="$UP" "file://$T/s256" >"$T/ls2"
same_file "ls-remote v0 = v2" "$T/ls0" "$T/ls2"
contains "ls-remote: peeled tag in sha1" "$T/ls0" "$(git -C "$T/s1" rev-parse 'v0.1^{}')	refs/tags/v0.1^{}"

# incremental fetch after new commits on the server (map brought up to date)
(
	cd "$T/s256"
	echo more >>a.txt && git commit -q -am "after the clone"
	git checkout -q topic && echo t2 >sub/topic.txt && git commit -q -am "topic again"
	git checkout -q main && git merge -q --no-edit topic -m "merge again"
	git tag -a v0.3 -m "third"
)
copy_history "$T/s256" "$T/s1" sha1
check "compat build after new commits" "$PACKWIRE" -C "$T/s256" compat build -q
for v in 2 0; do
	n_before=$(objects_of "$T/c$v" | wc -l)
	loose_before=$(find "$T/c$v/objects" -path '*/objects/??/*' -type f | wc -l)
	# unpacked: a thin pack's bases stay out, so the loose objects are
	# exactly what the pack carried
	check "v$v: incremental fetch" \
		git -C "$T/c$v" -c protocol.version=$v -c fetch.unpackLimit=100000 fetch -q --upload-pack="$UP" "file://$T/s256" \
		'+refs/*:refs/*'
	same_copy "v$v fetch" "$T/c$v" "$T/s1"
	# the haves were translated: the pack holds only the new objects
	n_pack=$(($(find "$T/c$v/objects" -path '*/objects/??/*' -type f | wc -l) - loose_before))
	check "v$v fetch: only the new objects sent ($n_pack)" \
		[ "$n_pack" -eq $(($(objects_of "$T/c$v" | wc -l) - n_before)) ]
done

# an unknown want is refused by the server (a v0 client refuses it itself)
check_fails "v2: a want the map does not know" \
	git -C "$T/c2" -c protocol.version=2 fetch -q --upload-pack="$UP" "file://$T/s256" \
	0123456789012345678901234567890123456789 2>"$T/want.err"
contains "v2: not our ref" "$T/want.err" "not our ref"

# a shallow clone: the same shallow commits and objects as stock git's of the copy
for v in 2 0; do
	rm -rf "$T/sh$v" "$T/sh$v.ref"
	check "v$v: shallow clone" git -c protocol.version=$v clone -q --mirror --depth=2 \
		--upload-pack="$UP" "file://$T/s256" "$T/sh$v"
	git -c protocol.version=$v clone -q --mirror --depth=2 "file://$T/s1" "$T/sh$v.ref"
	sort "$T/sh$v/shallow" >"$T/sh.a"
	sort "$T/sh$v.ref/shallow" >"$T/sh.b"
	same_file "v$v shallow: the shallow commits" "$T/sh.b" "$T/sh.a"
	same_copy "v$v shallow" "$T/sh$v" "$T/sh$v.ref"
	# deepening sends the client's shallow commits back (translated)
	check "v$v: fetch --deepen=1" git -C "$T/sh$v" -c protocol.version=$v fetch -q --deepen=1 \
		--upload-pack="$UP" "file://$T/s256" '+refs/*:refs/*'
	git -C "$T/sh$v.ref" -c protocol.version=$v fetch -q --deepen=1 "file://$T/s1" '+refs/*:refs/*'
	sort "$T/sh$v/shallow" >"$T/sh.a"
	sort "$T/sh$v.ref/shallow" >"$T/sh.b"
	same_file "v$v deepen: the shallow commits" "$T/sh.b" "$T/sh.a"
	same_copy "v$v deepen" "$T/sh$v" "$T/sh$v.ref"
	# unshallow: the unshallow lines come in sha1, the history is whole
	check "v$v: fetch --unshallow" git -C "$T/sh$v" -c protocol.version=$v fetch -q --unshallow \
		--upload-pack="$UP" "file://$T/s256" '+refs/*:refs/*'
	check "v$v unshallow: no shallow file left" [ ! -e "$T/sh$v/shallow" ]
	same_copy "v$v unshallow" "$T/sh$v" "$T/s1"
done
# --shallow-exclude: the same boundary as stock git's of the copy (every
# commit here has the same date: --shallow-since cannot cut this history)
for opt in "--shallow-exclude=v0.1"; do
	rm -rf "$T/se" "$T/se.ref"
	git -c protocol.version=2 clone -q --mirror $opt --upload-pack="$UP" "file://$T/s256" "$T/se" 2>"$T/se.err" || true
	git -c protocol.version=2 clone -q --mirror $opt "file://$T/s1" "$T/se.ref" 2>/dev/null || true
	if [ -e "$T/se.ref/shallow" ]; then
		sort "$T/se/shallow" >"$T/sh.a" 2>/dev/null || : >"$T/sh.a"
		sort "$T/se.ref/shallow" >"$T/sh.b"
		same_file "clone $opt: the shallow commits" "$T/sh.b" "$T/sh.a"
		same_copy "clone $opt" "$T/se" "$T/se.ref"
	else
		skip "clone $opt: stock git made no shallow clone of the copy"
	fi
done

# ---- SHA-1 storage, SHA-256 clients ----------------------------------
make_repo "$T/r1" sha1
git -C "$T/r1" tag -d v0.2-annotated >/dev/null
copy_history "$T/r1" "$T/r256" sha256
check "compat build sha1 -> sha256" "$PACKWIRE" -C "$T/r1" compat build -q --object-format=sha256
UP256="$PACKWIRE upload-pack --object-format=sha256"
for v in 2 0; do
	rm -rf "$T/d$v"
	check "v$v: stock git (sha256) clones the sha1 repository" \
		git -c protocol.version=$v clone -q --mirror --upload-pack="$UP256" "file://$T/r1" "$T/d$v"
	check "v$v: the clone is sha256" [ "$(git -C "$T/d$v" rev-parse --show-object-format)" = sha256 ]
	same_copy "v$v reverse clone" "$T/d$v" "$T/r256"
	git -C "$T/d$v" verify-pack -v "$T/d$v"/objects/pack/*.idx >"$T/vpd$v"
	check "v$v: the sha256 pack has deltas" grep -qE '^[0-9a-f]{64} (blob|tree) +[0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9a-f]{64}$' "$T/vpd$v"
done

# no map: a clear error, not a broken pack
make_repo "$T/nomap" sha256
check_fails "no compat map: refused" \
	git clone -q --mirror --upload-pack="$UP" "file://$T/nomap" "$T/nomap.git"

finish
