#!/usr/bin/env bash
# packwire using remote helpers: stock git's git-remote-http through
# "http::<url>" (stateless-connect, v2, object-format) against Apache + git
# http-backend, git-remote-ext (connect), a connect helper written here, and
# Git's protocol policy on every transport (protocol.allow,
# protocol.<name>.allow, GIT_ALLOW_PROTOCOL, GIT_PROTOCOL_FROM_USER). SHA-1
# and SHA-256, checked with fsck --strict, refs and object format.
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
unset GIT_ALLOW_PROTOCOL GIT_PROTOCOL_FROM_USER
. "$(dirname "$0")/http-lib.sh"
pw() { "$PACKWIRE" "$@"; }

# a connect helper of our own, found on PATH
mkdir -p bin
cat >bin/git-remote-pwtest <<'HELPER'
#!/bin/sh
# git-remote-pwtest <remote> <path>: "connect" to git's own services there
echo "$GIT_DIR" >"$PWTEST_LOG.gitdir"
while read -r cmd arg; do
	case $cmd in
	capabilities) printf 'connect\noption\n\n' ;;
	option) echo unsupported ;;
	connect) echo; exec git "${arg#git-}" "$2" ;;
	*) echo "unknown $cmd" >&2; exit 1 ;;
	esac
done
HELPER
chmod +x bin/git-remote-pwtest
# a fetch helper of our own: list and fetch from a local repository
cat >bin/git-remote-pwfetch <<'HELPER'
#!/bin/sh
# git-remote-pwfetch <remote> <path>
src=$2
while read -r cmd arg rest; do
	case $cmd in
	capabilities) printf 'fetch\noption\nobject-format\n\n' ;;
	option) [ "$arg" = object-format ] && echo ok || echo unsupported ;;
	list)
		echo ":object-format $(git --git-dir="$src" rev-parse --show-object-format)"
		echo "@$(git --git-dir="$src" symbolic-ref HEAD) HEAD"
		git --git-dir="$src" for-each-ref --format='%(objectname) %(refname)'
		echo ;;
	fetch)
		oids=$arg
		while read -r c2 a2 r2; do [ -n "$c2" ] || break; oids="$oids $a2"; done
		# shellcheck disable=SC2086
		git --git-dir="$src" pack-objects --revs --stdout -q <<-EOF | git index-pack --stdin >/dev/null
		$(printf '%s\n' $oids)
		EOF
		echo ;;
	'') exit 0 ;;
	*) echo "unknown $cmd" >&2; exit 1 ;;
	esac
done
HELPER
chmod +x bin/git-remote-pwfetch
export PATH=$T/bin:$PATH PWTEST_LOG=$T/pwtest

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
done

for algo in sha1 sha256; do
	r=$T/srv/$algo.git
	# ---- ext:: (git-remote-ext, connect) ----
	t="ext $algo"
	check_fails "$t: refused by default" pw clone -q "ext::git %s $r" "ext-no-$algo"
	check "$t: nothing written when refused" test ! -e "ext-no-$algo"
	pw clone -q "ext::git %s $r" "ext-no-$algo" 2>err-ext || true
	contains "$t: Git's message" err-ext "transport 'ext' not allowed"
	if pw -c protocol.ext.allow=always clone -q "ext::git %s $r" "ext-$algo" 2>"ext-$algo.err"; then
		check "$t: clone is fsck --strict clean" fsck_ok "ext-$algo"
		check "$t: clone's object format" test "$(git -C "ext-$algo" rev-parse --show-object-format)" = "$algo"
		check "$t: clone has the server's branches" \
			test "$(git -C "ext-$algo" rev-parse origin/main)" = "$(git -C "$r" rev-parse main)"
	else
		not_ok "$t: clone"
		cat "ext-$algo.err"
	fi
	GIT_ALLOW_PROTOCOL=ext pw ls-remote "ext::git %s $r" >"ls-ext-$algo" 2>&1 ||
		not_ok "$t: ls-remote with GIT_ALLOW_PROTOCOL=ext"
	git ls-remote "$r" >"ls-ext-$algo.expect"
	same_file "$t: ls-remote (GIT_ALLOW_PROTOCOL=ext) lists the refs" "ls-ext-$algo.expect" "ls-ext-$algo"
	# push through connect
	if [ -d "ext-$algo" ]; then
		(cd "ext-$algo" && echo ext >>a.txt && git commit -q -am "over ext")
		if pw -C "ext-$algo" -c protocol.ext.allow=always push "ext::git %s $r" main:refs/heads/from-ext 2>"ext-push-$algo.err"; then
			check "$t: push reached the server" \
				test "$(git -C "$r" rev-parse from-ext)" = "$(git -C "ext-$algo" rev-parse main)"
			check "$t: server is fsck --strict clean" fsck_ok "$r"
		else
			not_ok "$t: push"
			cat "ext-push-$algo.err"
		fi
	fi
	# ---- a connect helper of our own (<name>::<address>) ----
	t="pwtest:: $algo"
	check_fails "$t: a user transport is refused when not from the user" \
		env GIT_PROTOCOL_FROM_USER=0 "$PACKWIRE" clone -q "pwtest::$r" "pt-no-$algo"
	if pw clone -q "pwtest::$r" "pt-$algo" 2>"pt-$algo.err"; then
		check "$t: clone is fsck --strict clean" fsck_ok "pt-$algo"
		check "$t: clone has the server's branches" \
			test "$(git -C "pt-$algo" rev-parse origin/from-ext)" = "$(git -C "$r" rev-parse from-ext)"
		check "$t: the helper got GIT_DIR" test -s "$PWTEST_LOG.gitdir"
	else
		not_ok "$t: clone"
		cat "pt-$algo.err"
	fi
	if [ -d "pt-$algo" ]; then
		git -C "$r" update-ref refs/heads/moved "$(git -C "$r" rev-parse main~1)"
		if pw -C "pt-$algo" fetch -q origin 2>"pt-f-$algo.err"; then
			check "$t: fetch brings the new branch" \
				test "$(git -C "pt-$algo" rev-parse origin/moved)" = "$(git -C "$r" rev-parse moved)"
		else
			not_ok "$t: fetch"
			cat "pt-f-$algo.err"
		fi
	fi
	check_fails "$t: protocol.pwtest.allow=never refuses it" \
		"$PACKWIRE" -c protocol.pwtest.allow=never ls-remote "pwtest::$r"
	check_fails "$t: GIT_ALLOW_PROTOCOL without it refuses it" \
		env GIT_ALLOW_PROTOCOL=file:ext "$PACKWIRE" ls-remote "pwtest::$r"
	# ---- a fetch helper of our own (list, fetch) ----
	t="pwfetch:: $algo"
	if pw clone -q "pwfetch::$r" "pf-$algo" 2>"pf-$algo.err"; then
		check "$t: clone is fsck --strict clean" fsck_ok "pf-$algo"
		check "$t: clone's object format" test "$(git -C "pf-$algo" rev-parse --show-object-format)" = "$algo"
		check "$t: clone has every branch" \
			diff -q <(git -C "pf-$algo" for-each-ref --format='%(objectname) %(refname:lstrip=3)' refs/remotes/origin | grep -v ' HEAD$') \
			<(git -C "$r" for-each-ref --format='%(objectname) %(refname:lstrip=2)' refs/heads)
		check "$t: HEAD checked out" test "$(git -C "pf-$algo" rev-parse HEAD)" = "$(git -C "$r" rev-parse HEAD)"
	else
		not_ok "$t: clone"
		cat "pf-$algo.err"
	fi
	pw ls-remote "pwfetch::$r" >"ls-pf-$algo" 2>&1 || not_ok "$t: ls-remote"
	git ls-remote "$r" | grep -v '\^{}$' >"ls-pf-$algo.expect"
	same_file "$t: ls-remote lists the refs" "ls-pf-$algo.expect" "ls-pf-$algo"
	# ---- policy on packwire's own transports ----
	t="policy $algo"
	check_fails "$t: protocol.file.allow=never refuses a local clone" \
		"$PACKWIRE" -c protocol.file.allow=never clone -q "$r" "pol-file-$algo"
	check "$t: nothing written" test ! -e "pol-file-$algo"
	check_fails "$t: protocol.allow=never refuses file:// too" \
		"$PACKWIRE" -c protocol.allow=never ls-remote "file://$r"
	check "$t: protocol.allow=never, protocol.file.allow=always allows it" \
		"$PACKWIRE" -c protocol.allow=never -c protocol.file.allow=always ls-remote "file://$r"
	check_fails "$t: GIT_ALLOW_PROTOCOL=ssh refuses file" \
		env GIT_ALLOW_PROTOCOL=ssh "$PACKWIRE" ls-remote "$r"
	check_fails "$t: GIT_ALLOW_PROTOCOL wins over protocol.file.allow=always" \
		env GIT_ALLOW_PROTOCOL=ssh "$PACKWIRE" -c protocol.file.allow=always ls-remote "$r"
	check_fails "$t: protocol.file.allow=user, GIT_PROTOCOL_FROM_USER=0" \
		env GIT_PROTOCOL_FROM_USER=0 "$PACKWIRE" -c protocol.file.allow=user ls-remote "$r"
	check "$t: protocol.file.allow=user from the user" \
		"$PACKWIRE" -c protocol.file.allow=user ls-remote "$r"
done

# ---- http:: through stock git-remote-http (stateless-connect) ----
if ! need_httpd; then
	skip "apache2 (apache2-bin), curl or openssl missing: the http:: part"
	finish
fi
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT
for algo in sha1 sha256; do
	r=$algo.git
	t="http:: $algo"
	pw ls-remote "http::$U/git-open/$r" >"ls-http-$algo" 2>"ls-http-$algo.err" ||
		{ not_ok "$t: ls-remote"; cat "ls-http-$algo.err"; }
	git ls-remote "srv/$r" >"ls-http-$algo.expect"
	same_file "$t: ls-remote lists the server's refs" "ls-http-$algo.expect" "ls-http-$algo"
	if pw clone -q "http::$U/git-open/$r" "h-$algo" 2>"h-$algo.err"; then
		check "$t: clone is fsck --strict clean" fsck_ok "h-$algo"
		check "$t: clone's object format (from the v2 capabilities)" \
			test "$(git -C "h-$algo" rev-parse --show-object-format)" = "$algo"
		check "$t: clone has the server's branches" \
			test "$(git -C "h-$algo" rev-parse origin/main)" = "$(git -C "srv/$r" rev-parse main)"
		check "$t: all objects arrived" diff -q <(all_objects "srv/$r") <(all_objects "h-$algo")
	else
		not_ok "$t: clone"
		cat "h-$algo.err"
		continue
	fi
	git -C "srv/$r" update-ref refs/heads/later "$(git -C "srv/$r" rev-parse main~2)"
	if pw -C "h-$algo" fetch -q origin 2>"hf-$algo.err"; then
		check "$t: fetch brings the new branch" \
			test "$(git -C "h-$algo" rev-parse origin/later)" = "$(git -C "srv/$r" rev-parse later)"
	else
		not_ok "$t: fetch"
		cat "hf-$algo.err"
	fi
	check_fails "$t: protocol.http.allow=never refuses it" \
		"$PACKWIRE" -c protocol.http.allow=never ls-remote "http::$U/git-open/$r"
	# v0: git-remote-http offers list/fetch, which packwire drives
	pw -c protocol.version=0 ls-remote "http::$U/git-open/$r" >"ls0-$algo" 2>"ls0-$algo.err" ||
		{ not_ok "$t v0: ls-remote"; cat "ls0-$algo.err"; }
	git ls-remote "srv/$r" >"ls0-$algo.expect"
	same_file "$t v0 (list): ls-remote lists the server's refs" "ls0-$algo.expect" "ls0-$algo"
	if pw -c protocol.version=0 clone -q "http::$U/git-open/$r" "h0-$algo" 2>"h0-$algo.err"; then
		check "$t v0 (list/fetch): clone is fsck --strict clean" fsck_ok "h0-$algo"
		check "$t v0: clone's object format (from :object-format)" \
			test "$(git -C "h0-$algo" rev-parse --show-object-format)" = "$algo"
		check "$t v0: clone has the server's branches" \
			test "$(git -C "h0-$algo" rev-parse origin/later)" = "$(git -C "srv/$r" rev-parse later)"
		check "$t v0: work tree is clean" test -z "$(git -C "h0-$algo" status --porcelain)"
	else
		not_ok "$t v0: clone"
		cat "h0-$algo.err"
	fi
	check_fails "$t: push through a push-only helper is refused clearly" \
		"$PACKWIRE" -C "h-$algo" push "http::$U/git-open/$r" main:refs/heads/nope
done
finish
