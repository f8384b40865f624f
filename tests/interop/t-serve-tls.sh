#!/usr/bin/env bash
# `packwire serve --cert --key`: HTTPS with a self-signed certificate made
# here by openssl. Stock git clones (SHA-1 and SHA-256, v0 and v2) trusting
# it through GIT_SSL_CAINFO (git 2.39 here ignored -c http.sslCAInfo) and with
# http.sslVerify=false, is refused
# without either, and pushes with basic auth over TLS.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

if ! command -v openssl >/dev/null; then
	skip "openssl missing: scripts/install-deps.sh installs it"
	finish
fi
openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 \
	-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >openssl.log 2>&1

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
done
echo "carol:$(openssl passwd -6 tls-secret)" >htpasswd
start_serve tls "$T/srv" --cert="$T/cert.pem" --key="$T/key.pem" --auth-file="$T/htpasswd"
PID=$SERVE_PID
S=https://127.0.0.1:$SERVE_PORT
contains "serve says it listens on https" tls.log "listening on https://127.0.0.1:$SERVE_PORT/"

format_is() { test "$(git -C "$1" rev-parse --show-object-format)" = "$2"; }
for algo in sha1 sha256; do
	for v in 0 2; do
		c=ca-$algo-v$v
		GIT_SSL_CAINFO="$T/cert.pem" git -c protocol.version=$v clone -q --bare "$S/$algo.git" "$c" 2>"$c.err" ||
			{ not_ok "https $algo v$v: clone with GIT_SSL_CAINFO"; cat "$c.err"; }
		check "https $algo v$v: clone (GIT_SSL_CAINFO) fsck clean, refs, $algo" eval \
			'fsck_ok "$c" && same_refs "$c" "srv/$algo.git" && format_is "$c" $algo'
		c=nv-$algo-v$v
		git -c http.sslVerify=false -c protocol.version=$v clone -q --bare "$S/$algo.git" "$c" 2>"$c.err" ||
			{ not_ok "https $algo v$v: clone with sslVerify=false"; cat "$c.err"; }
		check "https $algo v$v: clone (sslVerify=false) fsck clean, refs, $algo" eval \
			'fsck_ok "$c" && same_refs "$c" "srv/$algo.git" && format_is "$c" $algo'
	done
	check_fails "https $algo: clone without trusting the certificate fails" \
		git clone -q --bare "$S/$algo.git" "untrusted-$algo" 2>"untrusted-$algo.err"
	contains "https $algo: ... with a certificate problem" "untrusted-$algo.err" "certificate"
	w=work-$algo
	git clone -q "srv/$algo.git" "$w"
	git -C "$w" commit -q --allow-empty -m "pushed over https"
	U=${S/https:\/\//https://carol:tls-secret@}
	check "https $algo: push with basic auth accepted" eval \
		'GIT_SSL_CAINFO="$T/cert.pem" git -C "$w" push -q "$U/$algo.git" HEAD:refs/heads/tls >"$w.out" 2>&1'
	check "https $algo: server has the pushed ref, fsck clean" eval \
		'test "$(git -C "srv/$algo.git" rev-parse refs/heads/tls)" = "$(git -C "$w" rev-parse HEAD)" && fsck_ok "srv/$algo.git"'
done
stop_serve $PID
check "SIGTERM: serve exits 0" test "$SERVE_RC" = 0
serve_logs_clean tls
finish
