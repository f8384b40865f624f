#!/usr/bin/env bash
# packwire as git's HTTP transport: stock git clone/fetch/ls-remote/push with
# an exec path whose git-remote-http and git-remote-https run `packwire
# remote-http`, against Apache + git http-backend, SHA-1 and SHA-256,
# protocol v0 (list/fetch/push) and v2 (stateless-connect), checked with
# fsck --strict, refs and object format. Push goes behind basic auth
# (credentials in the URL). Then git-remote-http's behaviours: dumb HTTP
# and GIT_SMART_HTTP=0, credentials asked once per process, GIT_TRACE_CURL
# (redacted), Accept-Language, one discovery per push, POST notes and
# chunked requests, --force-with-lease, redirects, text/plain errors.
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
. "$(dirname "$0")/http-lib.sh"

if ! need_httpd; then
	skip "apache2 (apache2-bin), curl or openssl missing: scripts/install-deps.sh installs them"
	finish
fi

# git's exec path, with our helper in place of git-remote-http(s)
EXEC=$T/exec
mkdir -p "$EXEC"
for f in "$(git --exec-path)"/*; do ln -s "$f" "$EXEC/"; done
for n in git-remote-http git-remote-https; do
	rm -f "$EXEC/$n"
	printf '#!/bin/sh\necho "$0 $*" >>"%s/helper.log"\nexec "%s" remote-http "$@"\n' "$T" "$PACKWIRE" >"$EXEC/$n"
	chmod +x "$EXEC/$n"
done
pgit() { GIT_EXEC_PATH=$EXEC git "$@"; }
cat >askpass <<ASKPASS
#!/bin/sh
echo "\$1" >>"$T/askpass.log"
case "\$1" in Username*) echo alice ;; *) echo secret ;; esac
ASKPASS
chmod +x askpass

check "remote-http -h answers with its usage" sh -c '"$PACKWIRE" remote-http -h >/dev/null; [ $? -eq 129 ]'

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
	git -C "srv/$algo.git" config http.receivepack true
	git -C "srv/$algo.git" update-server-info
done
# the same repositories as plain files (dumb HTTP), an error page in
# UTF-16 text/plain, a redirect
mkdir -p "$T/httpd"
cat >"$T/httpd/error.sh" <<'CGI'
#!/bin/sh
printf 'Status: 500 Intentional Breakage\nContent-Type: text/plain; charset=utf-16\n\n'
printf 'this is the error message\n' | iconv -f us-ascii -t utf-16
CGI
chmod +x "$T/httpd/error.sh"
HTTPD_EXTRA_CONF="Alias /dumb/ \"$T/srv/\"
ScriptAlias /error/ \"$T/httpd/error.sh/\"
Redirect /moved/ /git-open/"
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT
A=http://alice:secret@127.0.0.1:$HTTPD_PORT

for algo in sha1 sha256; do
	for v in 0 2; do
		t="$algo v$v"
		r=$algo.git
		c=clone-$algo-v$v
		: >"$T/helper.log"
		pgit -c protocol.version=$v ls-remote "$U/git-open/$r" >"ls-$c" 2>"ls-$c.err" ||
			{ not_ok "$t: ls-remote"; cat "ls-$c.err"; }
		git ls-remote "srv/$r" >"ls-$c.expect"
		same_file "$t: ls-remote through packwire lists the server's refs" "ls-$c.expect" "ls-$c"
		check "$t: git ran packwire as its helper" test -s "$T/helper.log"
		if pgit -c protocol.version=$v clone -q "$U/git-open/$r" "$c" 2>"$c.err"; then
			check "$t: clone is fsck --strict clean" fsck_ok "$c"
			check "$t: clone has the server's branches" \
				test "$(git -C "$c" rev-parse refs/remotes/origin/main)" = "$(git -C "srv/$r" rev-parse main)"
			check "$t: clone's object format is $algo" \
				test "$(git -C "$c" rev-parse --show-object-format)" = "$algo"
			check "$t: clone's tags" diff -q <(git -C "$c" tag | sort) <(git -C "srv/$r" tag | sort)
			check "$t: clone's work tree is clean" test -z "$(git -C "$c" status --porcelain)"
		else
			not_ok "$t: clone"
			cat "$c.err"
			continue
		fi
		# fetch: the server moves on
		s=up-$algo-v$v
		git clone -q "srv/$r" "$s"
		(cd "$s" && echo "more $v" >>a.txt && git commit -q -am "more $v" && git push -q origin main)
		own_httpd_root
		if pgit -C "$c" -c protocol.version=$v fetch -q origin 2>"$c.ferr"; then
			check "$t: fetch brings the new commit" \
				test "$(git -C "$c" rev-parse origin/main)" = "$(git -C "srv/$r" rev-parse main)"
			check "$t: fetched clone is fsck --strict clean" fsck_ok "$c"
		else
			not_ok "$t: fetch"
			cat "$c.ferr"
		fi
		# shallow clone
		if pgit -c protocol.version=$v clone -q --depth=1 "$U/git-open/$r" "sh-$c" 2>"sh-$c.err"; then
			check "$t: shallow clone has one commit" test "$(git -C "sh-$c" rev-list --count HEAD)" = 1
			check "$t: shallow clone is fsck clean" git -C "sh-$c" fsck --no-progress
		else
			not_ok "$t: shallow clone"
			cat "sh-$c.err"
		fi
		# --shallow-since / --shallow-exclude reach the server through the
		# helper ("option deepen-since", "option deepen-not"), as through git's
		for a in --shallow-exclude=v0.1 --shallow-since=1700000000; do
			n=${a%%=*}
			n=sx${n#--shallow-}-$c
			if pgit -c protocol.version=$v clone -q "$a" "$U/git-open/$r" "$n" 2>"$n.err"; then
				git -c protocol.version=$v clone -q "$a" "$U/git-open/$r" "$n-git" 2>/dev/null
				check "$t: clone $a as git's own helper's" diff -q \
					<(cat "$n/.git/shallow" 2>/dev/null; git -C "$n" rev-list --all) \
					<(cat "$n-git/.git/shallow" 2>/dev/null; git -C "$n-git" rev-list --all)
			else
				not_ok "$t: clone $a"
				cat "$n.err"
			fi
		done
		# push behind basic auth
		git -C "$c" pull -q --ff-only origin main
		(cd "$c" && echo "pushed $v" >>a.txt && git commit -q -am "pushed $v")
		if pgit -C "$c" -c protocol.version=$v push -q "$A/git/$r" main 2>"$c.perr"; then
			check "$t: push updated the server" \
				test "$(git -C "srv/$r" rev-parse main)" = "$(git -C "$c" rev-parse main)"
			check "$t: server is fsck --strict clean after the push" fsck_ok "srv/$r"
		else
			not_ok "$t: push"
			cat "$c.perr"
		fi
		own_httpd_root
		# credentials from GIT_ASKPASS (no credential helper, no user in the URL)
		(cd "$c" && echo "askpass $v" >>a.txt && git commit -q -am "askpass $v")
		if GIT_ASKPASS=$T/askpass pgit -C "$c" -c protocol.version=$v push -q "$U/git/$r" main 2>"$c.aerr"; then
			check "$t: push with GIT_ASKPASS updated the server" \
				test "$(git -C "srv/$r" rev-parse main)" = "$(git -C "$c" rev-parse main)"
			check "$t: askpass was asked as Git asks" \
				grep -qxF "Password for 'http://alice@127.0.0.1:$HTTPD_PORT': " "$T/askpass.log"
		else
			not_ok "$t: push with GIT_ASKPASS"
			cat "$c.aerr"
		fi
		own_httpd_root
		# a rejected (non-fast-forward) push is reported as git reports it
		git -C "$c" reset -q --hard HEAD~1
		(cd "$c" && echo "diverged $v" >>big.txt && git commit -q -am "diverged $v")
		if pgit -C "$c" push "$A/git/$r" main >"$c.rout" 2>&1; then
			not_ok "$t: non-fast-forward push succeeded"
		else
			contains "$t: non-fast-forward push is rejected" "$c.rout" "[rejected]"
		fi
		own_httpd_root
		# a new branch and its deletion
		if pgit -C "$c" push -q "$A/git/$r" HEAD:refs/heads/side-$v 2>"$c.berr" &&
			pgit -C "$c" push -q "$A/git/$r" :refs/heads/side-$v 2>>"$c.berr"; then
			check "$t: the pushed branch is gone again" \
				test -z "$(git -C "srv/$r" for-each-ref refs/heads/side-$v)"
		else
			not_ok "$t: push of a branch and its deletion"
			cat "$c.berr"
		fi
		own_httpd_root
	done
	t=$algo
	r=$algo.git
	c=clone-$algo-v0
	# dumb HTTP: stateless-connect falls back, list and fetch go through
	# packwire's dumb client
	git -C "srv/$r" update-server-info
	own_httpd_root
	if pgit clone -q "$U/dumb/$r" "dumb-$algo" 2>"dumb-$algo.err"; then
		check "$t: dumb clone through remote-http is fsck --strict clean" fsck_ok "dumb-$algo"
		check "$t: dumb clone has the server's main" \
			test "$(git -C "dumb-$algo" rev-parse origin/main)" = "$(git -C "srv/$r" rev-parse main)"
		check "$t: dumb clone's object format is $algo" \
			test "$(git -C "dumb-$algo" rev-parse --show-object-format)" = "$algo"
	else
		not_ok "$t: dumb clone through remote-http"
		cat "dumb-$algo.err"
	fi
	# http-alternates are the server's choice: protocol.http.allow=user
	# does not let them be followed (Git's from_user=0 check)
	git init -q --bare --object-format=$algo "srv/alt-$algo.git"
	echo "$U/dumb/$r/objects" >"srv/alt-$algo.git/objects/info/http-alternates"
	echo "$PWD/srv/$r/objects" >"srv/alt-$algo.git/objects/info/alternates"
	git -C "srv/alt-$algo.git" update-ref refs/heads/main "$(git -C "srv/$r" rev-parse main)"
	git -C "srv/alt-$algo.git" update-server-info
	own_httpd_root
	check_fails "$t: http-alternates refused with protocol.http.allow=user" \
		pgit -c http.followRedirects=true -c protocol.http.allow=user \
		clone -q "$U/dumb/alt-$algo.git" "alt-user-$algo" 2>/dev/null
	if pgit -c http.followRedirects=true -c protocol.http.allow=always \
		clone -q "$U/dumb/alt-$algo.git" "alt-always-$algo" 2>"alt-$algo.err"; then
		check "$t: a clone through http-alternates is fsck --strict clean" fsck_ok "alt-always-$algo"
	else
		not_ok "$t: clone through http-alternates"
		cat "alt-$algo.err"
	fi
	# GIT_SMART_HTTP=0: the dumb files of a smart server
	GIT_SMART_HTTP=0 pgit ls-remote "$U/git-open/$r" >"nosmart-$algo" 2>&1 || true
	contains "$t: GIT_SMART_HTTP=0 lists the refs as a dumb client" "nosmart-$algo" \
		"$(git -C "srv/$r" rev-parse main)	refs/heads/main"
	# credentials asked once per helper process, even with two connections
	# (list for-push, push); GIT_TRACE_CURL hides them; one GET per push
	git -C "$c" fetch -q "$PWD/srv/$r" main && git -C "$c" reset -q --hard FETCH_HEAD
	(cd "$c" && echo "once" >>a.txt && git commit -q -am "once")
	: >"$T/askpass.log"
	if GIT_ASKPASS=$T/askpass GIT_TRACE_CURL=$T/trace-$algo GIT_TRACE_BARE=1 LANGUAGE=ko_KR.UTF-8 \
		pgit -C "$c" push -v -v "$U/git/$r" main 2>"$c.once"; then
		check "$t: askpass asked once for the username and once for the password" \
			test "$(wc -l <"$T/askpass.log")" -eq 2
		contains "$t: GIT_TRACE_CURL shows the scheme, not the credentials" "$T/trace-$algo" \
			"=> Send header: Authorization: Basic <redacted>"
		check "$t: GIT_TRACE_CURL does not show the password" \
			test "$(grep -c 'Authorization: Basic [A-Za-z0-9]' "$T/trace-$algo")" = 0
		contains "$t: Accept-Language from LANGUAGE" "$T/trace-$algo" \
			"=> Send header: Accept-Language: ko-KR, *;q=0.9"
		contains "$t: push -v -v tells of the POST" "$c.once" "POST git-receive-pack ("
	else
		not_ok "$t: push with askpass and GIT_TRACE_CURL"
		cat "$c.once"
	fi
	own_httpd_root
	# one discovery for "list for-push" and "push" (a server without auth)
	(cd "$c" && echo "one GET" >>a.txt && git commit -q -am "one GET")
	if GIT_TRACE_CURL=$T/trace1-$algo GIT_TRACE_BARE=1 pgit -C "$c" push -q "$U/git-open/$r" main \
		2>"$c.oneget"; then
		check "$t: one info/refs GET for list for-push and push" test \
			"$(grep -c '=> Send header: GET .*info/refs?service=git-receive-pack' "$T/trace1-$algo")" = 1
	else
		not_ok "$t: push to a server without auth"
		cat "$c.oneget"
	fi
	own_httpd_root
	# http.postBuffer small: the POST goes chunked
	(cd "$c" && echo "chunked" >>a.txt && git commit -q -am "chunked")
	if pgit -C "$c" -c http.postBuffer=4 push -v -v "$A/git/$r" main 2>"$c.chunk"; then
		contains "$t: a push past http.postBuffer is chunked" "$c.chunk" \
			"POST git-receive-pack (chunked)"
		check "$t: the chunked push updated the server" \
			test "$(git -C "srv/$r" rev-parse main)" = "$(git -C "$c" rev-parse main)"
	else
		not_ok "$t: chunked push"
		cat "$c.chunk"
	fi
	own_httpd_root
	# --force-with-lease (option cas): a stale lease is refused, a right one forces
	old=$(git -C "srv/$r" rev-parse main)
	git -C "$c" reset -q --hard HEAD~1
	(cd "$c" && echo "lease" >>big.txt && git commit -q -am "lease")
	if pgit -C "$c" push --force-with-lease=main:$(git -C "$c" rev-parse HEAD) \
		"$A/git/$r" main >"$c.lease" 2>&1; then
		not_ok "$t: push with a stale lease succeeded"
	else
		contains "$t: a stale lease is refused" "$c.lease" "stale info"
		check "$t: the server kept its main" test "$(git -C "srv/$r" rev-parse main)" = "$old"
	fi
	if pgit -C "$c" push -q --force-with-lease=main:$old "$A/git/$r" main 2>"$c.lease2"; then
		check "$t: a push with the right lease forces" \
			test "$(git -C "srv/$r" rev-parse main)" = "$(git -C "$c" rev-parse main)"
	else
		not_ok "$t: push with the right lease"
		cat "$c.lease2"
	fi
	own_httpd_root
	# a push option with quotes: git C-quotes it to the helper, which unquotes
	git -C "srv/$r" config receive.advertisePushOptions true
	cat >"srv/$r/hooks/pre-receive" <<'H'
#!/bin/sh
cat >/dev/null
printf '%s\n' "$GIT_PUSH_OPTION_0" >"$GIT_DIR/push-option-seen"
H
	chmod +x "srv/$r/hooks/pre-receive"
	own_httpd_root
	(cd "$c" && echo "option" >>a.txt && git commit -q -am "push option")
	if pgit -C "$c" push -q --push-option='"embedded quotes" \ é' "$A/git/$r" main 2>"$c.popt"; then
		check "$t: a quoted push option reaches the hook intact" \
			test "$(cat "srv/$r/push-option-seen")" = '"embedded quotes" \ é'
	else
		not_ok "$t: push with a quoted push option"
		cat "$c.popt"
	fi
	rm -f "srv/$r/hooks/pre-receive"
	own_httpd_root
	# a redirect is followed and told of
	if pgit ls-remote "$U/moved/$r" >"moved-$algo" 2>"moved-$algo.err"; then
		contains "$t: the redirect is reported" "moved-$algo.err" "warning: redirecting to $U/git-open/$r/"
	else
		not_ok "$t: ls-remote through a redirect"
		cat "moved-$algo.err"
	fi
done
# a server's text/plain error is shown, from its charset
check_fails "a server error fails the clone" pgit clone -q "$U/error/x.git" err-clone 2>err-clone.err
contains "the server's text/plain error is shown" err-clone.err "remote: this is the error message"
# a URL without a scheme is refused at once
"$PACKWIRE" remote-http "http::/example.com/repo.git" </dev/null 2>noscheme.err && not_ok "no scheme accepted" ||
	contains "a URL without a scheme is refused" noscheme.err "url has no scheme"
finish
