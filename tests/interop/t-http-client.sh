#!/usr/bin/env bash
# packwire's HTTP client (libcurl) against Apache httpd + `git http-backend`
# and + `packwire http-backend`: ls-remote, clone, fetch and push, SHA-1 and
# SHA-256, protocol v0 and v2, checked with fsck --strict, refs and object
# format. Push is behind basic auth: user:pass in the URL, and a credential
# helper this test writes (its get/store/erase calls are checked); a 404
# and a wrong password give Git's messages.
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
	make_repo "src-$algo" "$algo"
	for be in pw git; do
		git clone -q --bare "src-$algo" "srv/$algo-$be.git"
	done
done
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT
pw() { "$PACKWIRE" "$@"; }

for algo in sha1 sha256; do
	for v in 0 2; do
		for be in git pw; do
			r=$algo-$be.git
			t="$be $algo v$v"
			c=clone-$algo-$be-v$v
			# ls-remote
			pw -c protocol.version=$v ls-remote "$U/$be-open/$r" >"ls-$c" 2>"ls-$c.err" ||
				{ not_ok "$t: ls-remote"; cat "ls-$c.err"; }
			git ls-remote "srv/$r" >"ls-$c.expect"
			same_file "$t: ls-remote lists the server's refs" "ls-$c.expect" "ls-$c"
			# clone (bare and with a work tree)
			if pw -c protocol.version=$v clone -q --bare "$U/$be-open/$r" "$c" 2>"$c.err"; then
				check "$t: clone is fsck --strict clean" fsck_ok "$c"
				check "$t: clone has the server's refs" same_refs "$c" "srv/$r"
				check "$t: clone's object format is $algo" \
					test "$(git -C "$c" rev-parse --show-object-format)" = "$algo"
			else
				not_ok "$t: clone"
				cat "$c.err"
			fi
			w=work-$algo-$be-v$v
			if pw -c protocol.version=$v clone -q "$U/$be-open/$r" "$w" 2>"$w.err"; then
				check "$t: work-tree clone is clean" test -z "$(git -C "$w" status --porcelain)"
				check "$t: work-tree clone is fsck --strict clean" fsck_ok "$w"
			else
				not_ok "$t: work-tree clone"
				cat "$w.err"
				continue
			fi
			# fetch: the server moves on, a fetch with haves brings it
			s=up-$algo-$be-v$v
			git clone -q "srv/$r" "$s"
			git -C "$s" commit -q --allow-empty -m "more $v"
			echo "$be $v" >"$s/file-$be-$v"
			git -C "$s" add . && git -C "$s" commit -q -m "file $v"
			git -C "$s" push -q origin HEAD:refs/heads/main 2>/dev/null ||
				git -C "$s" push -q origin HEAD:refs/heads/master
			own_httpd_root
			if pw -C "$w" -c protocol.version=$v fetch -q origin 2>"$w.fetch.err"; then
				check "$t: fetch brings the new commits" \
					test "$(git -C "$w" rev-parse refs/remotes/origin/HEAD)" = \
					"$(git -C "srv/$r" rev-parse HEAD)"
				check "$t: fetched repository is fsck --strict clean" fsck_ok "$w"
			else
				not_ok "$t: fetch"
				cat "$w.fetch.err"
			fi
			# push behind basic auth, user:pass in the URL
			git -C "$w" commit -q --allow-empty -m "pushed by packwire v$v"
			if pw -C "$w" -c protocol.version=$v push -q "http://alice:secret@127.0.0.1:$HTTPD_PORT/$be/$r" \
				HEAD:refs/heads/pushed-v$v 2>"$w.push.err"; then
				check "$t: push with user:pass reached the server" \
					test "$(git -C "srv/$r" rev-parse refs/heads/pushed-v$v)" = \
					"$(git -C "$w" rev-parse HEAD)"
				check "$t: server is fsck --strict clean after the push" fsck_ok "srv/$r"
			else
				not_ok "$t: push with user:pass"
				cat "$w.push.err"
			fi
		done
	done
done

# a credential helper the test writes: get answers, store/erase are logged
cat >"$T/cred-helper" <<EOF
#!/bin/sh
{ echo "action \$1"; cat; echo; } >>"$T/cred.log"
if [ "\$1" = get ]; then echo username=alice; echo password=\${CRED_PASS:-secret}; fi
EOF
chmod +x "$T/cred-helper"
w=work-sha1-git-v2
git -C "$w" commit -q --allow-empty -m "pushed with a helper"
: >"$T/cred.log"
if pw -C "$w" -c credential.helper="$T/cred-helper" push -q "$U/git/sha1-git.git" \
	HEAD:refs/heads/helper 2>helper.err; then
	ok "push with a credential helper"
else
	not_ok "push with a credential helper"
	cat helper.err
fi
contains "the helper was asked (get) with protocol and host" "$T/cred.log" \
	"action get" "protocol=http" "host=127.0.0.1:$HTTPD_PORT"
contains "the helper was told to store the working password" "$T/cred.log" \
	"action store" "username=alice" "password=secret"
check "the helper's push reached the server" test \
	"$(git -C srv/sha1-git.git rev-parse refs/heads/helper)" = "$(git -C "$w" rev-parse HEAD)"
: >"$T/cred.log"
git -C "$w" commit -q --allow-empty -m "wrong password"
check_fails "a wrong password from the helper is refused" env CRED_PASS=wrong \
	"$PACKWIRE" -C "$w" -c credential.helper="$T/cred-helper" push -q "$U/git/sha1-git.git" \
	HEAD:refs/heads/helper2
CRED_PASS=wrong "$PACKWIRE" -C "$w" -c credential.helper="$T/cred-helper" push -q \
	"$U/git/sha1-git.git" HEAD:refs/heads/helper2 2>wrong.err || true
contains "Git's words for a failed authentication" wrong.err \
	"fatal: Authentication failed for '$U/git/sha1-git.git/'"
contains "the helper was told to erase the wrong password" "$T/cred.log" "action erase" \
	"password=wrong"
check "nothing was pushed with a wrong password" \
	test -z "$(git -C srv/sha1-git.git for-each-ref refs/heads/helper2)"
"$PACKWIRE" -C "$w" push -q "$U/git/sha1-git.git" HEAD:refs/heads/helper3 2>noauth.err || true
contains "without credentials: Git's words" noauth.err \
	"could not read Username for 'http://127.0.0.1:$HTTPD_PORT': terminal prompts disabled"

# errors worded as Git's
"$PACKWIRE" ls-remote "$U/git-open/nope.git" >/dev/null 2>nope.err || true
contains "missing repository: Git's words" nope.err \
	"fatal: repository '$U/git-open/nope.git/' not found"
check_fails "clone of a missing repository fails" "$PACKWIRE" clone -q "$U/git-open/nope.git" nope
check "a failed clone leaves no directory" test ! -e nope
port=$(free_port)
"$PACKWIRE" ls-remote "http://127.0.0.1:$port/x.git" >/dev/null 2>refused.err || true
contains "connection refused: Git's words" refused.err \
	"fatal: unable to access 'http://127.0.0.1:$port/x.git/': "

# a push larger than http.postBuffer goes chunked; a fetch whose haves pass
# 1 KiB goes gzip'd, over several stateless rounds (many local commits the
# server does not have), v0 and v2
w=work-sha256-git-v0
head -c 300000 /dev/urandom >"$w/big.bin"
git -C "$w" add big.bin && git -C "$w" commit -q -m "a big file"
if "$PACKWIRE" -C "$w" -c http.postBuffer=65520 push -q \
	"http://alice:secret@127.0.0.1:$HTTPD_PORT/git/sha256-git.git" HEAD:refs/heads/big 2>big.err; then
	check "a chunked push arrived" test "$(git -C srv/sha256-git.git rev-parse refs/heads/big)" = \
		"$(git -C "$w" rev-parse HEAD)"
	check "the server is fsck --strict clean after it" fsck_ok srv/sha256-git.git
else
	not_ok "a push over http.postBuffer (chunked)"
	cat big.err
fi
for v in 0 2; do
	l=many-v$v
	git init -q --object-format=sha1 "$l"
	for i in $(seq 1 150); do git -C "$l" commit -q --allow-empty -m "local $i"; done
	git -C "$l" remote add origin "$U/git-open/sha1-pw.git"
	if "$PACKWIRE" -C "$l" -c protocol.version=$v fetch -q origin 2>"$l.err"; then
		check "v$v: a fetch with 150 unknown haves (gzip'd rounds) works" fsck_ok "$l"
		check "v$v: and brings the server's refs" test \
			"$(git -C "$l" rev-parse refs/remotes/origin/main)" = \
			"$(git -C srv/sha1-pw.git rev-parse refs/heads/main)"
	else
		not_ok "v$v: fetch with many haves"
		cat "$l.err"
	fi
done

# http.extraHeader and http.userAgent reach the server (git http-backend
# does not care; Apache's CGI sees HTTP_* variables: check the access by
# a request that a header-gated location would refuse is out of scope here)
quiet() { "$@" >/dev/null; }
check "http.extraHeader and http.userAgent are accepted" quiet "$PACKWIRE" \
	-c http.extraHeader="X-Test: 1" -c http.userAgent="pw-test/1" ls-remote "$U/git-open/sha1-git.git"

finish
