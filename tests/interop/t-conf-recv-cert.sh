#!/bin/bash
# Signed pushes (git push --signed) to packwire receive-pack, SHA-1 and
# SHA-256, as Git's t5534 checks them: push-cert=<nonce> advertised only
# with receive.certNonceSeed, the certificate stored as a blob, the
# signature checked with gpg and the nonce with the seed, GIT_PUSH_CERT*
# for the hooks, and push options that must match the certificate's. The
# gpg key is made here in a temporary GNUPGHOME (gpg-agent stopped at the end).
. "$(dirname "$0")/lib.sh"

RP="$PACKWIRE receive-pack"

if ! command -v gpg >/dev/null || ! command -v gpgconf >/dev/null; then
	skip "gpg is not installed (scripts/install-deps.sh installs it)"
	finish
fi
# gpg-agent's socket path must stay short: not under the build tree
GNUPGHOME=$(mktemp -d /tmp/pw-gpg.XXXXXX)
export GNUPGHOME
stop_agent() { gpgconf --kill gpg-agent 2>/dev/null || true; rm -rf "$GNUPGHOME"; }
trap stop_agent EXIT
gpg --batch -q --passphrase '' --quick-gen-key "Pusher Person <pusher@example.com>" ed25519 sign never 2>/dev/null
keyid=$(gpg --with-colons --list-keys pusher@example.com | awk -F: '$1 == "pub" { print $5; exit }')

for algo in sha1 sha256; do
	C=$T/c-$algo S=$T/s-$algo.git
	make_repo "$C" "$algo"
	git -C "$C" config user.signingkey pusher@example.com
	git init -q --bare --object-format="$algo" "$S"
	git -C "$C" push -q --receive-pack="$RP" "$S" main~1:refs/heads/main topic 2>/dev/null

	# ---- no seed: no push-cert ---------------------------------------------
	$RP --advertise-refs "$S" >"$T/adv"
	check_fails "$algo: no push-cert without receive.certNonceSeed" grep -qa "push-cert" "$T/adv"
	check_fails "$algo: --signed push is refused without it" \
		git -C "$C" push --signed --receive-pack="$RP" "$S" main 2>"$T/err"
	contains "$algo: ... with Git's message" "$T/err" "the receiving end does not support --signed push"

	git -C "$S" config receive.certNonceSeed sekrit
	$RP --advertise-refs "$S" >"$T/adv"
	hexsz=40
	[ "$algo" = sha256 ] && hexsz=64
	check "$algo: push-cert=<stamp>-<hmac> advertised" \
		grep -qaE "push-cert=[0-9]+-[0-9a-f]{$hexsz}( |\$)" "$T/adv"

	cat >"$S/hooks/post-receive" <<-\HOOK
	#!/bin/sh
	cat >/dev/null
	env | grep '^GIT_PUSH_CERT' | sort >cert-env
	if test -n "${GIT_PUSH_CERT-}"; then git cat-file blob "$GIT_PUSH_CERT" >cert-blob; fi
	HOOK
	chmod +x "$S/hooks/post-receive"

	# ---- unsigned push: no certificate -------------------------------------
	git -C "$C" push -q --receive-pack="$RP" "$S" main~1:refs/heads/plain 2>/dev/null
	check "$algo: an unsigned push gives the hooks no certificate" test ! -s "$S/cert-env"

	# ---- signed push ---------------------------------------------------------
	git -C "$C" push -q --signed --receive-pack="$RP" "$S" main 2>"$T/err"
	main=$(git -C "$C" rev-parse main)
	old=$(git -C "$C" rev-parse main~1)
	check "$algo: the signed push updated the ref" test "$(git -C "$S" rev-parse main)" = "$main"
	contains "$algo: status G" "$S/cert-env" "GIT_PUSH_CERT_STATUS=G"
	contains "$algo: the signer" "$S/cert-env" "GIT_PUSH_CERT_SIGNER=Pusher Person <pusher@example.com>"
	contains "$algo: the key" "$S/cert-env" "GIT_PUSH_CERT_KEY=$keyid"
	contains "$algo: the nonce is ours" "$S/cert-env" "GIT_PUSH_CERT_NONCE_STATUS=OK"
	nonce=$(sed -n 's/^nonce //p' "$S/cert-blob")
	contains "$algo: GIT_PUSH_CERT_NONCE is the certificate's" "$S/cert-env" "GIT_PUSH_CERT_NONCE=$nonce"
	cert=$(sed -n 's/^GIT_PUSH_CERT=//p' "$S/cert-env")
	check "$algo: the certificate is a blob in the repository" \
		test "$(git -C "$S" cat-file -t "$cert")" = blob
	contains "$algo: the certificate names the update" "$S/cert-blob" "$old $main refs/heads/main"
	contains "$algo: ... and is signed" "$S/cert-blob" "BEGIN PGP SIGNATURE"
	check "$algo: fsck of the server" fsck_ok "$S"

	# ---- push options must match the certificate's --------------------------
	git -C "$S" config receive.advertisePushOptions true
	printf 'xxxx' | $RP "$S" >"$T/preamble" 2>/dev/null || true
	# the fake receive-pack may still be writing when git push returns:
	# it publishes the request by rename, and the test waits for that
	rm -f "$T/push"
	printf '#!/bin/sh\ncat "%s"\nprintf xxxx\ncat >"%s.tmp"\nmv "%s.tmp" "%s"\n' \
		"$T/preamble" "$T/push" "$T/push" "$T/push" >"$T/fake-rp"
	chmod +x "$T/fake-rp"
	git -C "$C" push --signed --push-option=foo --push-option=bar --receive-pack="$T/fake-rp" \
		"$S" --delete topic >/dev/null 2>&1 || true
	for i in $(seq 1 100); do [ -e "$T/push" ] && break; sleep 0.1; done
	contains "$algo: the certificate carries the push options" "$T/push" "push-option bar"
	sed 's/\([^ ]\)bar/\1baz/' "$T/push" >"$T/push.tweak"
	$RP "$S" <"$T/push.tweak" >"$T/out" 2>&1 || true
	check "$algo: other push options than signed: nothing deleted" git -C "$S" rev-parse -q --verify topic
	contains "$algo: ... 'inconsistent push options'" "$T/out" "inconsistent push options"
	sleep 1 # a nonce of another second
	$RP "$S" <"$T/push" >/dev/null 2>&1 || true
	check_fails "$algo: the same options: the delete goes through" git -C "$S" rev-parse -q --verify topic
	contains "$algo: a replayed nonce is not ours" "$S/cert-env" "GIT_PUSH_CERT_NONCE_STATUS=BAD"
	# ---- the nonce is signed over the path as named (Git's service_dir) ----
	# stamp-HMAC(seed, "<path>:<stamp>") with the repository's hash: the path
	# given on the command line, "." under http-backend (Git runs its
	# receive-pack there with "."), never the resolved git dir.
	nonce_for() { # <path> <stamp>
		python3 -c 'import hmac, hashlib, sys
print("%s-%s" % (sys.argv[3], hmac.new(b"sekrit", ("%s:%s" % (sys.argv[2], sys.argv[3])).encode(), getattr(hashlib, sys.argv[1])).hexdigest()))' "$algo" "$1" "$2"
	}
	adv_nonce() { sed -n 's/.*push-cert=\([0-9]*-[0-9a-f]*\).*/\1/p' "$1" | head -n 1; }
	(cd "$T" && $RP --advertise-refs "s-$algo.git" >"$T/adv-rel")
	n=$(adv_nonce "$T/adv-rel")
	check "$algo: nonce signed over the relative path as given" \
		test "$n" = "$(nonce_for "s-$algo.git" "${n%%-*}")"
	$RP --advertise-refs "$S/" >"$T/adv-slash"
	n=$(adv_nonce "$T/adv-slash")
	check "$algo: ... and the absolute one, trailing slash kept" test "$n" = "$(nonce_for "$S/" "${n%%-*}")"
	git -C "$S" config http.receivepack true
	GIT_PROJECT_ROOT=$T PATH_INFO=/s-$algo.git/info/refs QUERY_STRING=service=git-receive-pack \
		REQUEST_METHOD=GET GIT_HTTP_EXPORT_ALL=1 $PACKWIRE http-backend >"$T/adv-http"
	n=$(adv_nonce "$T/adv-http")
	check "$algo: http-backend signs over \".\" as git http-backend does" \
		test "$n" = "$(nonce_for . "${n%%-*}")"
done
finish
