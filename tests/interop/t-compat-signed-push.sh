#!/usr/bin/env bash
# Signed pushes (git push --signed) into the other algorithm's view:
# receive-pack --object-format=W of a repository stored in S (sha256
# storage with sha1 clients and the reverse) advertises push-cert with
# receive.certNonceSeed; the certificate stock git signs names the
# client's (W) ids and is stored as it came, a blob of the repository
# (GIT_PUSH_CERT, a S id, with its W id in the map); the hooks get the
# signature and nonce checks (GIT_PUSH_CERT_STATUS, _NONCE_STATUS ...),
# PACKWIRE_PUSH_CERT_OBJECT_FORMAT=W, and storage ids on stdin. Refusals
# still happen: no seed (git refuses --signed), a non-fast-forward, a
# tampered certificate (bad signature, refused by a pre-receive hook that
# checks it) with nothing written. Also through `packwire daemon`
# (git://.../REPO@W) and `packwire serve` (http://.../REPO@W, stateless). The gpg key is made in a temporary GNUPGHOME.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"

if ! command -v gpg >/dev/null || ! command -v gpgconf >/dev/null; then
	skip "gpg is not installed (scripts/install-deps.sh installs it)"
	finish
fi
GNUPGHOME=$(mktemp -d /tmp/pw-gpg.XXXXXX)
export GNUPGHOME
trap 'stop_daemons; stop_serves; gpgconf --kill gpg-agent 2>/dev/null || true; rm -rf "$GNUPGHOME"' EXIT
gpg --batch -q --passphrase '' --quick-gen-key "Pusher Person <pusher@example.com>" ed25519 sign never 2>/dev/null
keyid=$(gpg --with-colons --list-keys pusher@example.com | awk -F: '$1 == "pub" { print $5; exit }')

srev() { "$PACKWIRE" -C "$1" rev-parse --verify -q "$2"; }
lookup() { "$PACKWIRE" -C "$1" compat lookup "$2"; }
# refs and packs (a refused signed push still leaves its certificate's
# loose blob behind, as Git does: it is written before the hooks run)
state() {
	(cd "$1" && { find objects/pack refs packed-refs -type f 2>/dev/null || true; } |
		LC_ALL=C sort | xargs -r sha256sum)
}
DP=$(free_port)
mkdir -p "$T/srv"
start_daemon pwd pw "$DP" --base-path="$T/srv" --enable=receive-pack
start_serve pws "$T/srv" --quiet

# signed_push_to WHAT URL (inside run_case: S, W, C, d): a new commit pushed
# signed into the view at URL; it maps, the signature and the nonce are good
signed_push_to() {
	commit_c "over-$1"
	check "$S/$W: signed push to the view over $1" git -C "$C" push -q --signed "$2" main
	check "$S/$W: ... main maps" test "$(lookup "$d.git" "$(srev "$d.git" main)")" = \
		"$(git -C "$C" rev-parse main)"
	contains "$S/$W: ... status G" "$d.git/cert-env" "GIT_PUSH_CERT_STATUS=G"
	contains "$S/$W: ... the nonce is ours" "$d.git/cert-env" "GIT_PUSH_CERT_NONCE_STATUS=OK"
}

run_case() {
	local S=$1 W=$2 d=$T/srv/$1
	local UP="$PACKWIRE upload-pack --object-format=$W"
	local RP="$PACKWIRE receive-pack --object-format=$W"
	rm -rf "$d" "$d.git"
	make_repo "$d" "$S" 2>/dev/null
	git clone -q --bare "$d" "$d.git"
	rm -rf "$d"
	touch "$d.git/git-daemon-export-ok"
	git -C "$d.git" config receive.denyNonFastForwards true
	check "$S: compat build --object-format=$W" \
		"$PACKWIRE" -C "$d.git" compat build -q --object-format="$W"
	git clone -q --upload-pack="$UP" "file://$d.git" "$T/c-$S"
	local C=$T/c-$S
	git -C "$C" config user.signingkey pusher@example.com

	# ---- no seed: no push-cert, git refuses --signed --------------------
	$RP --advertise-refs "$d.git" >"$T/adv" </dev/null
	check_fails "$S/$W: no push-cert without receive.certNonceSeed" grep -qa "push-cert" "$T/adv"
	commit_c() { (cd "$C" && echo "$1" >>a.txt && git commit -q -am "$1"); }
	commit_c one
	check_fails "$S/$W: --signed refused without it" \
		git -C "$C" push --signed --receive-pack="$RP" origin main 2>"$T/err"
	contains "$S/$W: ... with Git's message" "$T/err" "the receiving end does not support --signed push"

	git config -f "$d.git/config" receive.certNonceSeed sekrit
	$RP --advertise-refs "$d.git" >"$T/adv" </dev/null
	check "$S/$W: push-cert=<nonce> advertised in the view" grep -qaE "push-cert=[0-9]+-[0-9a-f]+" "$T/adv"
	contains "$S/$W: ... with object-format=$W" "$T/adv" "object-format=$W"

	cat >"$d.git/hooks/post-receive" <<-HOOK
	#!/bin/sh
	cat >hook-stdin
	env | grep '^GIT_PUSH_CERT\|^PACKWIRE_PUSH_CERT' | sort >cert-env
	if test -n "\${GIT_PUSH_CERT-}"; then "$PACKWIRE" cat-file blob "\$GIT_PUSH_CERT" >cert-blob; fi
	HOOK
	chmod +x "$d.git/hooks/post-receive"

	# ---- a signed push --------------------------------------------------
	old_w=$(git -C "$C" rev-parse origin/main)
	old_s=$(srev "$d.git" main)
	check "$S/$W: signed push into the view" \
		git -C "$C" push -q --signed --receive-pack="$RP" origin main
	new_w=$(git -C "$C" rev-parse main)
	new_s=$(srev "$d.git" main)
	check "$S/$W: main updated, maps to the signed id" test "$(lookup "$d.git" "$new_s")" = "$new_w"
	contains "$S/$W: status G" "$d.git/cert-env" "GIT_PUSH_CERT_STATUS=G"
	contains "$S/$W: the signer" "$d.git/cert-env" "GIT_PUSH_CERT_SIGNER=Pusher Person <pusher@example.com>"
	contains "$S/$W: the key" "$d.git/cert-env" "GIT_PUSH_CERT_KEY=$keyid"
	contains "$S/$W: the nonce is ours" "$d.git/cert-env" "GIT_PUSH_CERT_NONCE_STATUS=OK"
	contains "$S/$W: the hooks learn the certificate's object format" "$d.git/cert-env" \
		"PACKWIRE_PUSH_CERT_OBJECT_FORMAT=$W"
	contains "$S/$W: the certificate names the $W ids, as signed" "$d.git/cert-blob" \
		"$old_w $new_w refs/heads/main"
	contains "$S/$W: ... and is signed" "$d.git/cert-blob" "BEGIN PGP SIGNATURE"
	contains "$S/$W: the hooks' stdin has the $S ids" "$d.git/hook-stdin" "$old_s $new_s refs/heads/main"
	cert=$(sed -n 's/^GIT_PUSH_CERT=//p' "$d.git/cert-env")
	check "$S/$W: GIT_PUSH_CERT is a $S id of the repository" \
		test "$("$PACKWIRE" -C "$d.git" cat-file -t "$cert")" = blob -a "${#cert}" = "${#old_s}"
	check "$S/$W: ... with its $W id in the map" \
		test "$(lookup "$d.git" "$cert")" = "$(git -C "$C" hash-object --stdin <"$d.git/cert-blob")"
	# the certificate verifies as stock git would check it: payload + signature
	sed '/^-----BEGIN PGP SIGNATURE-----$/,$d' "$d.git/cert-blob" >"$T/payload"
	sed -n '/^-----BEGIN PGP SIGNATURE-----$/,$p' "$d.git/cert-blob" >"$T/sig"
	check "$S/$W: gpg verifies the stored certificate" gpg -q --verify "$T/sig" "$T/payload" 2>/dev/null

	# ---- signed, a tag and a new branch at once; --atomic ---------------
	git -C "$C" tag -a v9 -m "signed tag push" main
	git -C "$C" branch -q signed-branch main~1
	check "$S/$W: signed --atomic push of a tag and a branch" \
		git -C "$C" push -q --signed --atomic --receive-pack="$RP" origin v9 signed-branch
	contains "$S/$W: ... certificate names the tag in $W" "$d.git/cert-blob" \
		"$(git -C "$C" rev-parse v9) refs/tags/v9"
	check "$S/$W: ... the tag maps" test "$(lookup "$d.git" "$(srev "$d.git" refs/tags/v9)")" = \
		"$(git -C "$C" rev-parse v9)"

	# ---- push options, named in the certificate too ---------------------
	git config -f "$d.git/config" receive.advertisePushOptions true
	git -C "$C" commit -q --allow-empty -m "with options"
	check "$S/$W: signed push with push options" \
		git -C "$C" push -q --signed --push-option=first --push-option=second \
		--receive-pack="$RP" origin main
	contains "$S/$W: ... the certificate names them" "$d.git/cert-blob" "push-option second"
	contains "$S/$W: ... status G" "$d.git/cert-env" "GIT_PUSH_CERT_STATUS=G"
	check "$S/$W: ... main maps" test "$(lookup "$d.git" "$(srev "$d.git" main)")" = \
		"$(git -C "$C" rev-parse main)"

	# ---- refusals that still happen ------------------------------------
	git -C "$C" branch -q keep main
	git -C "$C" reset -q --hard HEAD~1
	commit_c rewritten
	state "$d.git" >"$T/before"
	check_fails "$S/$W: a signed non-fast-forward is refused" \
		git -C "$C" push -q -f --signed --receive-pack="$RP" origin main 2>"$T/err"
	contains "$S/$W: ... non-fast-forward" "$T/err" "non-fast-forward"
	git -C "$C" reset -q --hard keep

	# a tampered certificate: its signature fails, the hook refuses
	cat >"$d.git/hooks/pre-receive" <<-\HOOK
	#!/bin/sh
	cat >/dev/null
	if test -n "${GIT_PUSH_CERT-}" && test "$GIT_PUSH_CERT_STATUS" != G; then
		echo "bad signature: $GIT_PUSH_CERT_STATUS" >&2
		exit 1
	fi
	HOOK
	chmod +x "$d.git/hooks/pre-receive"
	commit_c tampered
	printf 'xxxx' | $RP "$d.git" >"$T/preamble" 2>/dev/null || true
	rm -f "$T/push"
	printf '#!/bin/sh\ncat "%s"\nprintf xxxx\ncat >"%s.tmp"\nmv "%s.tmp" "%s"\n' \
		"$T/preamble" "$T/push" "$T/push" "$T/push" >"$T/fake-rp"
	chmod +x "$T/fake-rp"
	git -C "$C" push --signed --receive-pack="$T/fake-rp" origin main:refs/heads/signed1 >/dev/null 2>&1 || true
	for _ in $(seq 1 100); do [ -e "$T/push" ] && break; sleep 0.1; done
	contains "$S/$W: the recorded certificate names the $W id" "$T/push" \
		"$(git -C "$C" rev-parse main) refs/heads/signed1"
	# same length: the pkt-lines stay valid, the signature does not
	sed 's/refs\/heads\/signed1/refs\/heads\/signed2/' "$T/push" >"$T/push.tweak"
	state "$d.git" >"$T/before"
	$RP "$d.git" <"$T/push.tweak" >"$T/out" 2>&1 || true
	contains "$S/$W: a tampered certificate: status B for the hook" "$T/out" "bad signature: B"
	check_fails "$S/$W: ... no ref" srev "$d.git" refs/heads/signed2
	state "$d.git" >"$T/after"
	same_file "$S/$W: ... refs and packs unchanged" \
		"$T/before" "$T/after"
	# the untouched request goes in (its nonce is stale by now: the hook sees it)
	$RP "$d.git" <"$T/push" >"$T/out" 2>&1 || true
	check "$S/$W: the recorded request as signed goes in" \
		test "$(lookup "$d.git" "$(srev "$d.git" refs/heads/signed1)")" = "$(git -C "$C" rev-parse main)"
	rm -f "$d.git/hooks/pre-receive"

	# ---- through the daemon, the view's name ----------------------------
	signed_push_to daemon "git://127.0.0.1:$DP/$S.git@$W"
	# ---- over HTTP (packwire serve): stateless, the nonce comes back in
	# another request (within receive.certNonceSlop it is ours)
	git config -f "$d.git/config" http.receivepack true
	git config -f "$d.git/config" receive.certNonceSlop 60
	signed_push_to http "http://127.0.0.1:$SERVE_PORT/$S.git@$W"
	contains "$S/$W: ... the certificate names the $W id" "$d.git/cert-blob" \
		"$(git -C "$C" rev-parse main) refs/heads/main"
	check "$S/$W: the map verifies" sh -c '"$1" -C "$2" compat verify >/dev/null' _ "$PACKWIRE" "$d.git"
}

run_case sha256 sha1
run_case sha1 sha256
daemon_logs_clean
serve_logs_clean pws
finish
