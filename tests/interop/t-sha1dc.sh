#!/usr/bin/env bash
# SHA-1 collision detection from the outside.
# 1. `packwire hash-file` on the attack vectors (tests/data/sha1dc):
#    SHAttered and
#    SHA-mbles refused with Git's message and exit 1 after the other files,
#    the reduced-round collision and every other input hashed as sha1sum and
#    sha256sum do (random data, every length 0..200, standard input). The
#    whole PDFs of ../shared/sha1dc are t-sha1dc-vectors.sh's.
# 2. The refusal paths end to end. A real colliding Git object needs a new
#    attack, so packwire-test-hooks (the CLI with tests/hooks/collision.c)
#    reports the ids in PW_TEST_COLLISION as attacks. An ordinary object
#    flagged so is refused by receive-pack (pack kept and unpacked to loose
#    objects), by clone and fetch (from stock git upload-pack), by bundle
#    unbundle, by index-pack, by hash-object -w, by the dumb HTTP walk and by
#    the compat translator (convert): Git's message reaches the user, and
#    nothing is written (no object, no ref, no tmp_pack_*, no clone
#    directory). `packwire serve` refuses the push over HTTP and stays up for
#    the next one. SHA-256 repositories are not affected.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

HOOKED=${PACKWIRE_TEST_HOOKS:-$PW_BUILD/packwire-test-hooks}
HOOKED=$(realpath "$HOOKED")
DATA=$PW_SRC/tests/data/sha1dc
pw() { "$PACKWIRE" "$@"; }
hooked() { "$HOOKED" "$@"; }
msg() { echo "SHA-1 appears to be part of a collision attack: $1"; }

# --- 1. hash-file ----------------------------------------------------------

check_hash_file() { # NAME FILE EXPECTED-HEX DETECTED(0|1)
	local rc=0
	pw hash-file "$2" >out 2>err || rc=$?
	if [ "$4" = 1 ]; then
		check "$1: exit 1" test "$rc" = 1
		contains "$1: Git's message" err "error: $2: $(msg "$3")"
		check "$1: no digest printed" test ! -s out
	else
		check "$1: exit 0" test "$rc" = 0
		same_file "$1: digest" out <(echo "$3  $2")
	fi
}
check_hash_file "shattered-1 prefix" "$DATA/shattered-1-320.bin" \
	f92d74e3874587aaf443d1db961d4e26dde13e9c 1
check_hash_file "shattered-2 prefix" "$DATA/shattered-2-320.bin" \
	f92d74e3874587aaf443d1db961d4e26dde13e9c 1
check_hash_file "sha-mbles-1" "$DATA/sha-mbles-1.bin" 8ac60ba76f1999a1ab70223f225aefdc78d4ddc0 1
check_hash_file "sha-mbles-2" "$DATA/sha-mbles-2.bin" 8ac60ba76f1999a1ab70223f225aefdc78d4ddc0 1
check_hash_file "reduced-round collision" "$DATA/sha1_reducedsha_coll.bin" \
	a56374e1cf4c3746499bc7c0acb39498ad2ee185 0

# random data and every length 0..200, against sha1sum and sha256sum
head -c 3000000 /dev/urandom >random.bin
mkdir lens
for n in $(seq 0 200); do head -c "$n" random.bin >"lens/$n"; done
pw hash-file random.bin lens/* >pw1
sha1sum random.bin lens/* >want1
same_file "random data and lengths 0..200: as sha1sum" pw1 want1
pw hash-file --object-format=sha256 random.bin lens/* >pw256
sha256sum random.bin lens/* >want256
same_file "--object-format=sha256: as sha256sum" pw256 want256
pw hash-file --object-format sha256 lens/3 >pw256b
same_file "--object-format VALUE" pw256b <(sha256sum lens/3)
pw hash-file - <random.bin >stdin.out
same_file "standard input as -" stdin.out <(sha1sum - <random.bin)
rc=0
pw hash-file --object-format=sha256 "$DATA/sha-mbles-1.bin" >out 2>&1 || rc=$?
check "sha256 of an attack file: no detection (exit 0)" test "$rc" = 0
rc=0
pw hash-file nosuchfile "$DATA/sha1_reducedsha_coll.bin" >out 2>err || rc=$?
check "missing file: exit 1" test "$rc" = 1
contains "missing file: says so" err "nosuchfile: No such file or directory"
contains "missing file: the other file still hashed" out a56374e1cf4c3746499bc7c0acb39498ad2ee185
rc=0
pw hash-file >out 2>err || rc=$?
check "no file: usage (129)" test "$rc" = 129
rc=0
pw hash-file --object-format=md5 x >out 2>err || rc=$?
check "unknown object format: fatal (128)" test "$rc" = 128
contains "unknown object format: message" err "unknown object format 'md5'"

# --- 2. the refusal paths ----------------------------------------------------

# state DIR: refs, objects, and any temporary pack or quarantine left
state() {
	refs "$1"
	all_objects "$1"
	find "$1" \( -name 'tmp_*' -o -name 'incoming-*' -o -name '*.lock' \) -print | sort
}

make_repo src sha1
git -C src commit -q --allow-empty -m "another"
BLOB=$(cd src && echo "the object the hook flags" | git hash-object -w --stdin)
git -C src update-index --add --cacheinfo 100644 "$BLOB" flagged.txt
git -C src commit -q -m "adds the flagged object"
export PW_TEST_COLLISION=$BLOB

# receive-pack: kept as a pack (unpackLimit 1) and unpacked to loose objects
for limit in 1 1000; do
	rm -rf "srv-$limit.git"
	git init -q --bare "srv-$limit.git"
	git -C "srv-$limit.git" config receive.unpackLimit "$limit"
	git -C src push -q "../srv-$limit.git" HEAD~1:refs/heads/main
	state "srv-$limit.git" >before
	rc=0
	git -C src push --receive-pack="$HOOKED receive-pack" "../srv-$limit.git" \
		HEAD:refs/heads/main >push.out 2>&1 || rc=$?
	check "receive-pack (unpackLimit $limit): push fails" test "$rc" != 0
	contains "receive-pack (unpackLimit $limit): the client sees Git's message" push.out \
		"remote: error: $(msg "$BLOB")"
	state "srv-$limit.git" >after
	same_file "receive-pack (unpackLimit $limit): repository unchanged" before after
	check "receive-pack (unpackLimit $limit): fsck clean" fsck_ok "srv-$limit.git"
done

# clone and fetch from stock git upload-pack
git clone -q --bare src up.git
rc=0
hooked clone "file://$T/up.git" clone-out >clone.log 2>&1 || rc=$?
check "clone: fails (128)" test "$rc" = 128
contains "clone: Git's message" clone.log "$(msg "$BLOB")"
check "clone: no directory left behind" test ! -e clone-out
git init -q --bare fetcher.git
git -C src push -q ../fetcher.git HEAD~1:refs/heads/main
state fetcher.git >before
rc=0
(cd fetcher.git && hooked fetch "file://$T/up.git" 'refs/heads/*:refs/heads/*') \
	>fetch.log 2>&1 || rc=$?
check "fetch: fails" test "$rc" != 0
contains "fetch: Git's message" fetch.log "$(msg "$BLOB")"
state fetcher.git >after
same_file "fetch: repository unchanged" before after

# bundle unbundle, index-pack, hash-object
git -C src bundle create ../all.bundle --all 2>/dev/null
git init -q --bare unb.git
state unb.git >before
rc=0
(cd unb.git && hooked bundle unbundle ../all.bundle) >unb.log 2>&1 || rc=$?
check "bundle unbundle: fails" test "$rc" != 0
contains "bundle unbundle: Git's message" unb.log "$(msg "$BLOB")"
state unb.git >after
same_file "bundle unbundle: repository unchanged" before after

git -C src rev-list --objects --all | git -C src pack-objects -q --stdout >all.pack
git init -q --bare ip.git
state ip.git >before
rc=0
(cd ip.git && hooked index-pack --stdin <../all.pack) >ip.log 2>&1 || rc=$?
check "index-pack --stdin: fails" test "$rc" != 0
contains "index-pack: Git's message" ip.log "$(msg "$BLOB")"
state ip.git >after
same_file "index-pack: repository unchanged" before after

rc=0
echo "the object the hook flags" >flagged.txt
hooked hash-object flagged.txt >ho.out 2>&1 || rc=$?
check "hash-object: fails (128)" test "$rc" = 128
contains "hash-object: Git's message" ho.out "$(msg "$BLOB")"
rc=0
PW_TEST_COLLISION=0000000000000000000000000000000000000000 hooked hash-object flagged.txt \
	>ho2.out 2>&1 || rc=$?
same_file "hash-object: another flagged id does not touch this one" ho2.out <(echo "$BLOB")

# dumb HTTP: a loose-only copy served by python's http.server
git clone -q --bare src dumb.git
for p in dumb.git/objects/pack/*.pack; do
	mv "$p" d.pack
	rm -f "${p%.pack}.idx"
	git -C dumb.git unpack-objects -q <d.pack
done
git -C dumb.git update-server-info
PYPORT=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$T" "$PYPORT" >py.log 2>&1 &
PYSRV=$!
trap 'kill $PYSRV 2>/dev/null || true; wait $PYSRV 2>/dev/null || true; stop_serves' EXIT
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PYPORT/" && break; sleep 0.1; done
rc=0
hooked clone "http://127.0.0.1:$PYPORT/dumb.git" dumb-out >dumb.log 2>&1 || rc=$?
check "dumb HTTP clone: fails" test "$rc" != 0
contains "dumb HTTP clone: Git's message" dumb.log "$(msg "$BLOB")"
check "dumb HTTP clone: no directory left behind" test ! -e dumb-out
kill $PYSRV 2>/dev/null || true
wait $PYSRV 2>/dev/null || true

# the compat translator: a SHA-256 repository converted to SHA-1, where the
# flagged id is the SHA-1 of one of its objects
git init -q --object-format=sha256 s256
(cd s256 && echo "the object the hook flags" >f && git add f && git commit -q -m one)
rc=0
hooked convert --to=sha1 s256/.git conv.git >conv.log 2>&1 || rc=$?
check "convert to sha1: fails" test "$rc" != 0
contains "convert to sha1: Git's message" conv.log "$(msg "$BLOB")"
check "convert: no half repository left" test ! -e conv.git
rc=0
PW_TEST_COLLISION=0000000000000000000000000000000000000000 hooked convert --to=sha1 -q \
	s256/.git conv-ok.git >conv2.log 2>&1 || rc=$?
check "convert without a flagged id: works" test "$rc" = 0

# SHA-256 repositories: never refused (the flag is a SHA-1 id)
make_repo src256 sha256
git init -q --bare --object-format=sha256 srv256.git
rc=0
git -C src256 push -q --receive-pack="$HOOKED receive-pack" ../srv256.git main >p256.log 2>&1 ||
	rc=$?
check "sha256 push through the hooked receive-pack: accepted" test "$rc" = 0
check "sha256: fsck clean" fsck_ok srv256.git

# packwire serve: the push is refused, the server stays up for the next one
mkdir base
git init -q --bare base/r.git
git -C base/r.git config http.receivepack true
git -C src push -q ../base/r.git HEAD~1:refs/heads/main
state base/r.git >before
PACKWIRE=$HOOKED start_serve srv "$T/base"
rc=0
git -C src push "http://127.0.0.1:$SERVE_PORT/r.git" HEAD:refs/heads/main >http.log 2>&1 || rc=$?
check "serve: push refused" test "$rc" != 0
contains "serve: Git's message reaches the client" http.log "$(msg "$BLOB")"
state base/r.git >after
same_file "serve: repository unchanged" before after
check "serve: still running" kill -0 "$SERVE_PID"
git -C src checkout -q -b clean HEAD~1
git -C src commit -q --allow-empty -m "nothing flagged here"
rc=0
git -C src push -q "http://127.0.0.1:$SERVE_PORT/r.git" clean:refs/heads/clean >http2.log 2>&1 ||
	rc=$?
check "serve: the next push is accepted" test "$rc" = 0
check "serve: fsck clean" fsck_ok base/r.git
stop_serve "$SERVE_PID"
check "serve: stops cleanly" test "$SERVE_RC" = 0

finish
