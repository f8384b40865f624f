#!/usr/bin/env bash
# packwire's HTTP client over https (Apache mod_ssl with a self-signed
# certificate this test makes): refused without the CA, accepted with
# http.sslCAInfo, and with http.sslVerify=false / GIT_SSL_NO_VERIFY; and
# redirects as Git follows them (http.followRedirects initial/true/false:
# the discovery's redirect moves the base the POSTs go to).
. "$(dirname "$0")/lib.sh"
# the machine's TLS and proxy settings are not this test's
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
. "$(dirname "$0")/http-lib.sh"

if ! need_httpd; then
	skip "apache2 (apache2-bin), curl or openssl missing: scripts/install-deps.sh installs them"
	finish
fi

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo" >/dev/null 2>&1
	git clone -q --bare "src-$algo" "srv/$algo.git"
done
TLS=
if [ -f "$HTTPD_MODULES/mod_ssl.so" ] && [ -f "$HTTPD_MODULES/mod_socache_shmcb.so" ]; then
	TLS=1
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
		-addext "subjectAltName=IP:127.0.0.1" -keyout "$T/key.pem" -out "$T/cert.pem" \
		2>/dev/null
	chmod 644 "$T/key.pem" "$T/cert.pem"
	TLS_PORT=$(free_port)
	HTTPD_EXTRA_CONF="LoadModule ssl_module $HTTPD_MODULES/mod_ssl.so
LoadModule socache_shmcb_module $HTTPD_MODULES/mod_socache_shmcb.so
SSLSessionCache shmcb:$T/httpd/ssl_cache(51200)
Listen 127.0.0.1:$TLS_PORT
<VirtualHost 127.0.0.1:$TLS_PORT>
SSLEngine on
SSLCertificateFile $T/cert.pem
SSLCertificateKeyFile $T/key.pem
</VirtualHost>"
fi
HTTPD_EXTRA_CONF="${HTTPD_EXTRA_CONF:-}
Redirect 301 /moved/ /git-open/
Redirect 302 /loop/ /loop/"
export HTTPD_EXTRA_CONF
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT

# clone_ok NAME URL [packwire options...]: a clone that must work
clone_ok() {
	local name=$1 url=$2 algo=${3:-sha1}
	shift 3
	if "$PACKWIRE" "$@" clone -q --bare "$url" "$name" 2>"$name.err"; then
		check "$name: fsck --strict clean" fsck_ok "$name"
		check "$name: same refs as the server" same_refs "$name" "srv/$algo.git"
	else
		not_ok "$name: clone"
		cat "$name.err"
	fi
}

if [ -n "$TLS" ]; then
	S=https://127.0.0.1:$TLS_PORT
	for algo in sha1 sha256; do
		for v in 0 2; do
			clone_ok "tls-$algo-v$v" "$S/git-open/$algo.git" "$algo" \
				-c protocol.version=$v -c http.sslCAInfo="$T/cert.pem"
		done
	done
	"$PACKWIRE" clone -q "$S/git-open/sha1.git" no-ca 2>no-ca.err && rc=0 || rc=$?
	check "https without the CA is refused" test "$rc" -ne 0
	contains "with Git's words" no-ca.err "fatal: unable to access '$S/git-open/sha1.git/': " \
		"certificate"
	check "and leaves no directory" test ! -e no-ca
	clone_ok tls-noverify "$S/git-open/sha1.git" sha1 -c http.sslVerify=false
	GIT_SSL_NO_VERIFY=1 clone_ok tls-envnoverify "$S/git-open/sha1.git" sha1
	GIT_SSL_CAINFO=$T/cert.pem clone_ok tls-envca "$S/git-open/sha1.git" sha1
	# push over https with user:pass
	git clone -q "srv/sha1.git" work
	git -C work commit -q --allow-empty -m "over https"
	if "$PACKWIRE" -C work -c http.sslCAInfo="$T/cert.pem" push -q \
		"https://alice:secret@127.0.0.1:$TLS_PORT/git/sha1.git" HEAD:refs/heads/tls 2>push.err; then
		check "push over https arrived" test "$(git -C srv/sha1.git rev-parse refs/heads/tls)" = \
			"$(git -C work rev-parse HEAD)"
	else
		not_ok "push over https"
		cat push.err
	fi
else
	skip "mod_ssl is not installed: no https tests"
fi

# redirects: followed for the discovery by default; the POSTs then go to
# the new base (/git-open/), which needs no redirect of their own
for v in 0 2; do
	clone_ok "moved-v$v" "$U/moved/sha1.git" sha1 -c protocol.version=$v
	clone_ok "moved-true-v$v" "$U/moved/sha1.git" sha1 -c protocol.version=$v \
		-c http.followRedirects=true
done
"$PACKWIRE" -c http.followRedirects=false clone -q "$U/moved/sha1.git" nofollow 2>nofollow.err &&
	rc=0 || rc=$?
check "http.followRedirects=false: the redirect is not followed" test "$rc" -ne 0
contains "with a clear message" nofollow.err "fatal: unable to access '$U/moved/sha1.git/': redirect to"
check "and no directory is left" test ! -e nofollow
"$PACKWIRE" ls-remote "$U/loop/sha1.git" >/dev/null 2>loop.err || true
contains "a redirect loop ends with curl's words" loop.err "Maximum (20) redirects followed"

finish
