#!/usr/bin/env bash
# packwire remote-http as git-remote-http, for what Git's own HTTP tests
# (t5539, t5551, t5700, t5702, ...) look at beyond the result: stock git with
# packwire's helper against Apache + git http-backend and packwire
# http-backend, SHA-1 and SHA-256. Protocol v1 asked with the Git-Protocol
# header and answered "version 1" (protocol.version wins over
# GIT_TEST_PROTOCOL_VERSION, as in Git); GIT_TRACE_PACKET lines as
# git-remote-http and its fetch-pack/send-pack write them; a v2 answer cut
# off inside a packet's length or body reported in Git's words; push
# --signed through the helper (option pushcert: the certificate signed with
# gpg, its nonce, pushee and commands), when gpg is installed; a
# proc-receive hook's reports (report-status-v2 "option" lines: the ref it
# made instead) passed on to git as send-pack --helper-status does;
# push.negotiate (a v2 fetch with wait-for-done finds what the server has
# under a hidden ref: a smaller pack, told through trace2's
# write_pack_file/wrote; with v0 Git's two warnings and a full pack); the
# helper's "get" capability (git clone --bundle-uri over HTTP).
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
. "$(dirname "$0")/http-lib.sh"

if ! need_httpd; then
	skip "apache2 (apache2-bin), curl or openssl missing: scripts/install-deps.sh installs them"
	finish
fi

EXEC=$T/exec
mkdir -p "$EXEC"
for f in "$(git --exec-path)"/*; do ln -s "$f" "$EXEC/"; done
for n in git-remote-http git-remote-https; do
	rm -f "$EXEC/$n"
	printf '#!/bin/sh\nexec "%s" remote-http "$@"\n' "$PACKWIRE" >"$EXEC/$n"
	chmod +x "$EXEC/$n"
done
pgit() { GIT_EXEC_PATH=$EXEC git "$@"; }

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
	git -C "srv/$algo.git" config http.receivepack true
done
# v2 answers cut off: info/refs from git http-backend, the POST from a
# script that stops inside a packet (as Git's t5702 does)
mkdir -p "$T/httpd"
for kind in length body; do
	{
		printf '#!/bin/sh\nprintf "Content-Type: text/application/x-git-upload-pack-result\\n\\n"\n'
		[ $kind = length ] && echo 'printf "%s" "00"' || echo 'printf "%s%s" "0079" "45"'
	} >"$T/httpd/cut-$kind.sh"
	chmod +x "$T/httpd/cut-$kind.sh"
done
mkdir -p "$T/srv/files"
echo bogus >"$T/srv/files/bogus"
HTTPD_EXTRA_CONF="Alias /files/ \"$T/srv/files/\"
ScriptAliasMatch ^/cut-(length|body)/[^/]*/git-upload-pack\$ \"$T/httpd/cut-\$1.sh\"
ScriptAliasMatch ^/cut-(length|body)/(.*)\$ \"$T/httpd/git-backend/\$2\""
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT
# a gpg key for push --signed (its agent's socket path kept short)
GNUPGHOME=
if command -v gpg >/dev/null && command -v gpgconf >/dev/null; then
	GNUPGHOME=$(mktemp -d /tmp/pw-gpg.XXXXXX)
	export GNUPGHOME
	trap 'gpgconf --kill gpg-agent 2>/dev/null || true; rm -rf "$GNUPGHOME"; http_cleanup' EXIT
	gpg --batch -q --passphrase '' --quick-gen-key "Pusher Person <pusher@example.com>" ed25519 sign never 2>/dev/null
else
	skip "gpg is not installed: no signed push (scripts/install-deps.sh installs it)"
fi

for algo in sha1 sha256; do
	r=$algo.git
	for be in git pw; do
		t="$algo $be http-backend"
		# protocol v1: asked for on the GET and the POSTs, answered
		c=v1-$algo-$be
		if GIT_TRACE_PACKET=$T/$c.pkt GIT_TRACE_CURL=$T/$c.curl \
			pgit -c protocol.version=1 clone -q "$U/$be-open/$r" "$c" 2>"$c.err"; then
			check "$t: v1 clone is fsck --strict clean" fsck_ok "$c"
			check "$t: v1 clone has the server's main" \
				test "$(git -C "$c" rev-parse origin/main)" = "$(git -C "srv/$r" rev-parse main)"
			check "$t: v1 asked on the GET and the POST" \
				test "$(grep -c 'Send header: Git-Protocol: version=1' "$T/$c.curl")" -ge 2
			contains "$t: v1 answered (git< version 1)" "$T/$c.pkt" "packet:          git< version 1"
			contains "$t: the v1 fetch traced as fetch-pack's" "$T/$c.pkt" "packet:   fetch-pack> want "
			contains "$t: the server's answer traced" "$T/$c.pkt" "packet:   fetch-pack< NAK"
		else
			not_ok "$t: v1 clone"
			cat "$c.err"
			continue
		fi
		# v1 push: "version 1" from receive-pack, send-pack's trace
		(cd "$c" && echo "v1 $be" >>a.txt && git commit -q -am "v1 $be")
		if GIT_TRACE_PACKET=$T/$c.ppkt pgit -C "$c" -c protocol.version=1 \
			push -q origin HEAD:refs/heads/v1-$be 2>"$c.perr"; then
			check "$t: v1 push updated the server" \
				test "$(git -C "srv/$r" rev-parse v1-$be)" = "$(git -C "$c" rev-parse HEAD)"
			check "$t: server is fsck --strict clean after the v1 push" fsck_ok "srv/$r"
			contains "$t: receive-pack answered v1" "$T/$c.ppkt" "packet:          git< version 1"
			contains "$t: the push traced as send-pack's" "$T/$c.ppkt" "packet:    send-pack> "
		else
			not_ok "$t: v1 push"
			cat "$c.perr"
		fi
		own_httpd_root
		# protocol.version wins over GIT_TEST_PROTOCOL_VERSION, as in Git
		GIT_TEST_PROTOCOL_VERSION=0 GIT_TRACE_PACKET=$T/$c.env \
			pgit -C "$c" -c protocol.version=1 fetch -q origin 2>/dev/null || true
		contains "$t: protocol.version=1 over GIT_TEST_PROTOCOL_VERSION=0" "$T/$c.env" "git< version 1"
		# v0: the advertisement's capabilities in the trace (symref)
		c=v0-$algo-$be
		if GIT_TRACE_PACKET=$T/$c.pkt GIT_TEST_PROTOCOL_VERSION=0 \
			pgit clone -q "$U/$be-open/$r" "$c" 2>"$c.err"; then
			check "$t: v0 clone is fsck --strict clean" fsck_ok "$c"
			contains "$t: v0 advertisement traced with its symref" "$T/$c.pkt" "symref=HEAD:refs/heads/main"
			check "$t: v0 asks no version" test "$(grep -c 'version 1' "$T/$c.pkt")" = 0
		else
			not_ok "$t: v0 clone"
			cat "$c.err"
		fi
		# v2: the capabilities as git-remote-http traces them
		c=v2-$algo-$be
		if GIT_TRACE_PACKET=$T/$c.pkt pgit -c protocol.version=2 clone -q "$U/$be-open/$r" "$c" 2>"$c.err"; then
			check "$t: v2 clone is fsck --strict clean" fsck_ok "$c"
			contains "$t: v2 answered (git< version 2)" "$T/$c.pkt" "packet:          git< version 2"
			contains "$t: Git's v2 requests traced" "$T/$c.pkt" "packet:          git< command=fetch"
			contains "$t: response end traced" "$T/$c.pkt" "packet:          git> 0002"
		else
			not_ok "$t: v2 clone"
			cat "$c.err"
		fi
	done
	# push --signed: a certificate the server stores (nonce OK) and gpg
	# verifies; refused without a nonce, a warning with --signed=if-asked
	t=$algo
	if [ -n "$GNUPGHOME" ]; then
		for be in git pw; do
			c=signed-$algo-$be
			git clone -q "srv/$r" "$c"
			git -C "$c" config user.signingkey pusher@example.com
			(cd "$c" && echo "signed $be" >>a.txt && git commit -q -am "signed $be")
			check_fails "$t $be: --signed refused by a server without receive.certNonceSeed" \
				pgit -C "$c" push --signed "$U/$be-open/$r" HEAD:refs/heads/signed-$be 2>"$c.nerr"
			contains "$t $be: ... in Git's words" "$c.nerr" "the receiving end does not support --signed push"
			if pgit -C "$c" push --signed=if-asked "$U/$be-open/$r" HEAD:refs/heads/ifasked-$be 2>"$c.ierr"; then
				contains "$t $be: --signed=if-asked warns and pushes" "$c.ierr" \
					"not sending a push certificate since the receiving end does not support --signed push"
			else
				not_ok "$t $be: --signed=if-asked push"
				cat "$c.ierr"
			fi
			git -C "srv/$r" config receive.certNonceSeed sekrit
			git -C "srv/$r" config receive.certNonceSlop 30
			cat >"srv/$r/hooks/post-receive" <<-\HOOK
			#!/bin/sh
			cat >/dev/null
			env | grep '^GIT_PUSH_CERT' | sort >cert-env
			if test -n "${GIT_PUSH_CERT-}"; then git cat-file blob "$GIT_PUSH_CERT" >cert-blob; fi
			HOOK
			chmod +x "srv/$r/hooks/post-receive"
			rm -f "srv/$r/cert-env" "srv/$r/cert-blob"
			own_httpd_root
			if pgit -C "$c" push -q --signed "$U/$be-open/$r" HEAD:refs/heads/signed-$be 2>"$c.serr"; then
				new=$(git -C "$c" rev-parse HEAD)
				check "$t $be: the signed push updated the server" \
					test "$(git -C "srv/$r" rev-parse signed-$be)" = "$new"
				contains "$t $be: the server took the nonce" "srv/$r/cert-env" "GIT_PUSH_CERT_NONCE_STATUS=OK"
				contains "$t $be: the certificate names the pusher" "srv/$r/cert-blob" "pusher pusher@example.com "
				contains "$t $be: ... the pushee" "srv/$r/cert-blob" "pushee $U/$be-open/$r"
				contains "$t $be: ... the update" "srv/$r/cert-blob" "$(printf '%0*d' "${#new}" 0) $new refs/heads/signed-$be"
				sed -n '/^-----BEGIN PGP SIGNATURE-----/,$p' "srv/$r/cert-blob" >"$c.sig"
				sed '/^-----BEGIN PGP SIGNATURE-----/,$d' "srv/$r/cert-blob" >"$c.payload"
				check "$t $be: gpg verifies the certificate's signature" \
					gpg -q --verify "$c.sig" "$c.payload" 2>/dev/null
			else
				not_ok "$t $be: signed push"
				cat "$c.serr"
			fi
			rm -f "srv/$r/hooks/post-receive"
			git -C "srv/$r" config --unset receive.certNonceSeed
			git -C "srv/$r" config --unset receive.certNonceSlop
			own_httpd_root
		done
	fi
	# a proc-receive hook rewrites refs/for/* pushes: git shows the ref it
	# made, through the helper's "option refname" lines; push options reach it
	if command -v python3 >/dev/null; then
		git -C "srv/$r" config receive.procReceiveRefs refs/for
		git -C "srv/$r" config receive.advertisePushOptions true
		cp "$PW_SRC/tests/interop/proc-receive-hook.py" "srv/$r/hooks/proc-receive"
		echo rewrite >"srv/$r/proc-mode"
		for be in git pw; do
			c=proc-$algo-$be
			git clone -q "srv/$r" "$c"
			(cd "$c" && echo "proc $be" >>a.txt && git commit -q -am "proc $be")
			rm -f "srv/$r/proc.log"
			git -C "srv/$r" for-each-ref --format='delete %(refname)' refs/changes | git -C "srv/$r" update-ref --stdin
			own_httpd_root
			if pgit -C "$c" push -o reviewer=alice "$U/$be-open/$r" HEAD:refs/for/main/topic >"$c.out" 2>&1; then
				contains "$t $be: git shows the ref the hook made" "$c.out" "HEAD -> refs/changes/1"
				check "$t $be: ... which the server has" \
					test "$(git -C "srv/$r" rev-parse refs/changes/1)" = "$(git -C "$c" rev-parse HEAD)"
				check_fails "$t $be: the refs/for ref was not made" \
					git -C "srv/$r" rev-parse -q --verify refs/for/main/topic
				contains "$t $be: the push option reached the hook" "srv/$r/proc.log" "option: reviewer=alice"
			else
				not_ok "$t $be: push to a proc-receive hook"
				cat "$c.out"
			fi
			if pgit -C "$c" push --porcelain "$U/$be-open/$r" HEAD:refs/for/main/two >"$c.pout" 2>&1; then
				contains "$t $be: --porcelain shows the hook's ref" "$c.pout" "HEAD:refs/changes/1"
			else
				not_ok "$t $be: porcelain push to a proc-receive hook"
				cat "$c.pout"
			fi
		done
		git -C "srv/$r" config --unset receive.procReceiveRefs
		rm -f "srv/$r/hooks/proc-receive"
		own_httpd_root
	else
		skip "$t: python3 missing: no proc-receive hook"
	fi
	# push.negotiate: the server has the first commit, but under a ref
	# receive-pack hides; upload-pack tells of it
	wrote() { sed -n 's/.*"key":"write_pack_file\/wrote","value":"\([0-9]*\)".*/\1/p' "$1"; }
	for be in git pw; do
		c=neg-$algo-$be
		git init -q --object-format="$algo" "$c"
		for i in 1 2; do
			echo "$i $be" >"$c/f$i" && git -C "$c" add "f$i" && git -C "$c" commit -q -m "c$i"
		done
		for k in plain neg v0; do
			s=srv/neg-$algo-$be-$k.git
			git init -q --bare --object-format="$algo" "$s"
			git -C "$s" config http.receivepack true
			git -C "$c" push -q "$PWD/$s" HEAD~1:refs/remotes/origin/first
			git -C "$s" config receive.hideRefs refs/remotes/origin/first
		done
		own_httpd_root
		u=$U/$be-open/neg-$algo-$be
		if GIT_TRACE2_EVENT=$T/$c.plain pgit -C "$c" -c protocol.version=2 push -q "$u-plain.git" \
			HEAD:refs/heads/main 2>"$c.err" &&
			GIT_TRACE2_EVENT=$T/$c.neg pgit -C "$c" -c protocol.version=2 -c push.negotiate=1 \
				push -q "$u-neg.git" HEAD:refs/heads/main 2>>"$c.err" &&
			GIT_TEST_PROTOCOL_VERSION=0 GIT_TRACE2_EVENT=$T/$c.v0 pgit -C "$c" -c push.negotiate=1 \
				push -q "$u-v0.git" HEAD:refs/heads/main 2>"$c.v0err"; then
			check "$t $be: without push.negotiate the pack has 6 objects" test "$(wrote "$T/$c.plain")" = 6
			check "$t $be: with it, 3 (the server had the first commit)" test "$(wrote "$T/$c.neg")" = 3
			for k in plain neg v0; do
				check "$t $be $k: the push updated the server" \
					test "$(git -C "srv/neg-$algo-$be-$k.git" rev-parse main)" = "$(git -C "$c" rev-parse HEAD)"
				check "$t $be $k: the server is fsck --strict clean" fsck_ok "srv/neg-$algo-$be-$k.git"
			done
			printf 'warning: %s\nwarning: %s\n' "--negotiate-only requires protocol v2" \
				"push negotiation failed; proceeding anyway with push" >"$c.v0expect"
			grep "warning:" "$c.v0err" >"$c.v0warn" || true
			same_file "$t $be: v0 cannot negotiate: Git's two warnings" "$c.v0expect" "$c.v0warn"
			check "$t $be: ... and the whole pack" test "$(wrote "$T/$c.v0")" = 6
		else
			not_ok "$t $be: push with push.negotiate"
			cat "$c.err" "$c.v0err"
		fi
	done
	# bundle URIs: git fetches the bundle with the helper's "get"
	git -C "srv/$r" bundle create -q "$PWD/srv/files/$algo.bundle" --all 2>/dev/null
	own_httpd_root
	c=bundle-$algo
	printf 'capabilities\nget %s %s\n\n' "$U/files/$algo.bundle" "$T/$c.got" |
		"$PACKWIRE" remote-http origin "$U/git-open/$r" >"$c.out" 2>"$c.gerr" || true
	check "$t: get is among the helper's capabilities" grep -qx get "$c.out"
	check "$t: get fetched the bundle byte for byte" cmp -s "srv/files/$algo.bundle" "$T/$c.got"
	check "$t: git bundle verify takes it" git -C "srv/$r" bundle verify -q "$T/$c.got"
	printf 'get %s %s\n\n' "$U/files/missing" "$T/$c.none" |
		"$PACKWIRE" remote-http origin "$U/git-open/$r" >/dev/null 2>"$c.gerr" && not_ok "$t: get of a 404 succeeded" ||
		contains "$t: get of a 404 fails as git-remote-http" "$c.gerr" "failed to download file at URL"
	check "$t: ... leaving no file" test ! -e "$T/$c.none"
	# (Git 2.39 applies a bundle URI before it learns the remote's object
	# format: a clone's bundle can only be SHA-1)
	if [ "$algo" = sha1 ]; then
		if pgit clone -q --bundle-uri="$U/files/$algo.bundle" "$U/git-open/$r" "$c" 2>"$c.err"; then
			check "$t: the bundle's refs came by get (refs/bundles/main)" \
				test "$(git -C "$c" rev-parse refs/bundles/main)" = "$(git -C "srv/$r" rev-parse main)"
			check "$t: the clone with a bundle URI is fsck --strict clean" fsck_ok "$c"
		else
			not_ok "$t: clone with a bundle URI"
			cat "$c.err"
		fi
	fi
	pgit clone -q --bundle-uri="$U/files/bogus" "$U/git-open/$r" "$c-bogus" 2>"$c.bogus" || true
	contains "$t: a file that is no bundle is told as Git does" "$c.bogus" "is not a bundle"
	pgit clone -q --bundle-uri="$U/files/missing" "$U/git-open/$r" "$c-missing" 2>"$c.missing" || true
	contains "$t: a missing bundle is told as Git does" "$c.missing" "failed to download bundle from URI"
	check "$t: ... and the clone goes on" test -d "$c-missing/.git"
	# a v2 answer cut off inside a length, inside a body
	for kind in length body; do
		c=cut-$kind-$algo
		check_fails "$t: a v2 answer cut in its $kind fails the clone" \
			pgit -c protocol.version=2 clone -q "$U/cut-$kind/$r" "$c" 2>"$c.err"
		if [ $kind = length ]; then
			contains "$t: cut in a length, told as Git does" "$c.err" "2 bytes of length header were received"
		else
			contains "$t: cut in a body, told as Git does" "$c.err" "115 bytes of body are still expected"
		fi
		check "$t: the failed clone left nothing" test ! -e "$c"
	done
done
finish
