#!/bin/bash
# packfile-uris (issue 11, Git's t5702): with uploadpack.blobPackfileUri
# "<blob> <pack-hash> <uri>", packwire upload-pack advertises packfile-uris
# in v2 fetch, and for a client that accepts the URI's protocol leaves the
# blob out of the pack and names the URI in a packfile-uris section before
# it; stock git downloads it (served here by packwire serve) and ends with
# the whole history. Also: a malformed value is refused as Git refuses it,
# a client without packfile-uris gets the whole pack, and a commit whose
# tree is the empty tree (not on disk, as Git's store always has it) is
# served. SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"
. "$(dirname "$0")/serve-lib.sh"

UP="$PACKWIRE upload-pack"
mkdir -p "$T/www"
start_serve www "$T/www"

for algo in sha1 sha256; do
	P=$T/p-$algo
	rm -rf "$P"
	git init -q --object-format="$algo" "$P"
	echo my-blob >"$P/my-blob"
	echo other-blob >"$P/other-blob"
	git -C "$P" add my-blob other-blob
	git -C "$P" commit -q -m x
	blob=$(git -C "$P" hash-object my-blob)
	# the blob's own pack, served as a file by packwire serve
	D=$T/www/d-$algo.git
	git init -q --bare --object-format="$algo" "$D"
	touch "$D/git-daemon-export-ok"
	packh=$(echo "$blob" | git -C "$P" pack-objects "$D/objects/pack/pack")
	uri=http://127.0.0.1:$SERVE_PORT/d-$algo.git/objects/pack/pack-$packh.pack

	GIT_PROTOCOL=version=2 $UP --advertise-refs "$P" >"$T/adv"
	check_fails "$algo: no packfile-uris without the config" grep -qa "packfile-uris" "$T/adv"
	git -C "$P" config uploadpack.blobPackfileUri "$blob $packh $uri"
	GIT_PROTOCOL=version=2 $UP --advertise-refs "$P" >"$T/adv"
	contains "$algo: fetch=... packfile-uris advertised" "$T/adv" "fetch=shallow wait-for-done packfile-uris"

	# ---- the response, raw ----------------------------------------------------
	head=$(git -C "$P" rev-parse HEAD)
	{ pkt_nl "command=fetch"; pkt_nl "object-format=$algo"; delim
	  pkt_nl "want $head"; pkt_nl "packfile-uris http,https"; pkt_nl "done"; flush; } >"$T/req"
	GIT_PROTOCOL=version=2 $UP --stateless-rpc "$P" <"$T/req" >"$T/resp"
	contains "$algo: a packfile-uris section" "$T/resp" "packfile-uris"
	contains "$algo: ... naming the pack and its URI" "$T/resp" "$packh $uri"
	check "$algo: ... before the packfile section" \
		python3 -c 'import sys; d = open(sys.argv[1], "rb").read()
sys.exit(not (0 <= d.find(b"packfile-uris\n") < d.find(b"0001") < d.find(b"packfile\n")))' "$T/resp"
	{ pkt_nl "command=fetch"; pkt_nl "object-format=$algo"; delim
	  pkt_nl "want $head"; pkt_nl "packfile-uris ftp"; pkt_nl "done"; flush; } >"$T/req"
	GIT_PROTOCOL=version=2 $UP --stateless-rpc "$P" <"$T/req" >"$T/resp"
	check_fails "$algo: no URI of a protocol the client did not name" grep -qa "$packh" "$T/resp"

	# ---- stock git fetches through the URI ---------------------------------
	C=$T/c-$algo
	rm -rf "$C"
	git -c protocol.version=2 -c fetch.uriprotocols=http clone -q --no-local \
		--upload-pack="$UP" "$P" "$C" 2>"$T/err" || { cat "$T/err"; not_ok "$algo: clone"; }
	check "$algo: the clone has the blob" git -C "$C" cat-file -e "$blob"
	check "$algo: ... in a pack of its own (downloaded)" \
		test -n "$(grep -l . "$C/.git/objects/pack/pack-$packh.pack" 2>/dev/null || true)"
	check "$algo: fsck of the clone" fsck_ok "$C"
	C2=$T/c2-$algo
	rm -rf "$C2"
	git -c protocol.version=2 clone -q --no-local --upload-pack="$UP" "$P" "$C2"
	check "$algo: without fetch.uriprotocols the pack holds everything" \
		test "$(ls "$C2"/.git/objects/pack/*.pack | wc -l)" = 1

	# ---- malformed values ---------------------------------------------------------
	git -C "$P" config uploadpack.blobPackfileUri "$blob nonsense $uri"
	check_fails "$algo: a malformed value fails the fetch" \
		git -c protocol.version=2 -c fetch.uriprotocols=http clone -q --no-local \
		--upload-pack="$UP" "$P" "$T/bad-$algo" 2>"$T/err"
	contains "$algo: ... with Git's message" "$T/err" \
		"value of uploadpack.blobpackfileuri must be of the form"
	git -C "$P" config --unset-all uploadpack.blobPackfileUri

	# ---- the empty tree needs no file ---------------------------------------------
	E=$T/e-$algo
	git init -q --object-format="$algo" "$E"
	et=$(git -C "$E" hash-object -t tree /dev/null)
	c=$(printf 'tree %s\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n\ne\n' "$et" |
		git -C "$E" hash-object -t commit -w --stdin)
	git -C "$E" update-ref refs/heads/main "$c"
	check "$algo: the empty tree is not on disk" test ! -e "$E/.git/objects/${et:0:2}/${et:2}"
	check "$algo: a commit of the empty tree is served" \
		git clone -q --no-local --upload-pack="$UP" "$E" "$T/ec-$algo"
	check "$algo: ... and the clone is whole" fsck_ok "$T/ec-$algo"
done
finish
