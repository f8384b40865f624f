# shellcheck shell=bash
# Apache httpd for the HTTP tests (source after lib.sh): start_httpd writes a
# minimal config in $HTTPD_DIR serving $HTTPD_ROOT through CGI:
#   /pw/...   packwire http-backend     /git/...   git http-backend
#   /pw-open/ and /git-open/: the same without authentication
# Under /pw/ and /git/ a push (info/refs?service=git-receive-pack and
# git-receive-pack) needs basic auth as user "alice", password "secret".
# The server listens on a free 127.0.0.1 port ($HTTPD_PORT) and is stopped by
# pid when the test exits. As root, httpd and the repositories it serves
# belong to "nobody" (httpd will not serve CGI as root).
HTTPD_BIN=${HTTPD_BIN:-/usr/sbin/apache2}
HTTPD_MODULES=${HTTPD_MODULES:-/usr/lib/apache2/modules}
GIT_HTTP_BACKEND=${GIT_HTTP_BACKEND:-$(git --exec-path)/git-http-backend}

# need_httpd: 0 when apache and its modules are installed (else the caller skips)
need_httpd() {
	[ -x "$HTTPD_BIN" ] && [ -f "$HTTPD_MODULES/mod_cgi.so" ] &&
		[ -x "$GIT_HTTP_BACKEND" ] && command -v curl >/dev/null &&
		command -v openssl >/dev/null
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

HTTPD_PID=
stop_httpd() {
	if [ -n "$HTTPD_PID" ]; then
		kill "$HTTPD_PID" 2>/dev/null || true
		wait "$HTTPD_PID" 2>/dev/null || true
		HTTPD_PID=
	fi
}

# As root, httpd and the CGI programs run as "nobody", who must reach the
# test's directory and the packwire binary. A build tree below a private
# directory (a clone under /root, say) is out of its reach: the test then
# works in a directory of its own under /tmp, with a copy of the binary and
# the library, removed when the test ends.
HTTP_STAGE=
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
if [ "$(id -u)" -eq 0 ] &&
	! as_nobody sh -c 'test -x "$1" && cd "$2"' sh "$PACKWIRE" "$T" 2>/dev/null; then
	HTTP_STAGE=$(mktemp -d /tmp/pw-http.XXXXXX)
	chmod 755 "$HTTP_STAGE"
	cp "$PACKWIRE" "$HTTP_STAGE/packwire.bin"
	cp -P "$(dirname "$(readlink -f "$PACKWIRE")")"/libpackwire.so* "$HTTP_STAGE/" 2>/dev/null || true
	printf '#!/bin/sh
LD_LIBRARY_PATH=%s exec %s/packwire.bin "$@"
' "$HTTP_STAGE" "$HTTP_STAGE" \
		>"$HTTP_STAGE/packwire"
	chmod 755 "$HTTP_STAGE/packwire"
	PACKWIRE=$HTTP_STAGE/packwire
	T=$HTTP_STAGE/t
	mkdir -p "$T"
	cd "$T"
fi
http_cleanup() {
	stop_httpd
	[ -z "$HTTP_STAGE" ] || rm -rf "$HTTP_STAGE"
}
trap http_cleanup EXIT

# the test's own git, as root, reads repositories owned by "nobody": a
# global config of this test's own says they are safe
mkdir -p "$T/home"
printf '[init]\n\tdefaultBranch = main\n[safe]\n\tdirectory = *\n' >"$T/home/.gitconfig"
export HOME=$T/home
export GIT_TERMINAL_PROMPT=0
unset GIT_ASKPASS SSH_ASKPASS

# start_httpd ROOT: serve the repositories under ROOT (HTTPD_EXTRA_CONF, when
# set, is appended to the configuration: more modules, listeners, redirects)
start_httpd() {
	HTTPD_ROOT=$1
	HTTPD_DIR=$T/httpd
	mkdir -p "$HTTPD_DIR"
	# the CGI programs, through wrappers (HTTPD_TIME=1: each run's wall
	# seconds and peak KiB appended to $HTTPD_DIR/time-pw or time-git)
	local be cmd
	for be in pw git; do
		cmd="\"$GIT_HTTP_BACKEND\""
		[ $be = git ] || cmd="\"$PACKWIRE\" http-backend"
		[ -z "${HTTPD_TIME:-}" ] ||
			cmd="/usr/bin/time -a -f '%e %M' -o \"$HTTPD_DIR/time-$be\" $cmd"
		printf '#!/bin/sh\nexec %s\n' "$cmd" >"$HTTPD_DIR/$be-backend"
		chmod +x "$HTTPD_DIR/$be-backend"
	done
	# git http-backend, as "nobody", reads repositories of other owners
	mkdir -p "$HTTPD_DIR/home"
	printf '[safe]\n\tdirectory = *\n' >"$HTTPD_DIR/home/.gitconfig"
	echo "alice:$(openssl passwd -apr1 secret)" >"$HTTPD_DIR/htpasswd"
	local m=$HTTPD_MODULES as=()
	for _ in 1 2 3; do
		HTTPD_PORT=$(free_port)
		cat >"$HTTPD_DIR/httpd.conf" <<-CONF
			ServerName 127.0.0.1
			ServerRoot "$HTTPD_DIR"
			Listen 127.0.0.1:$HTTPD_PORT
			PidFile "$HTTPD_DIR/httpd.pid"
			DefaultRuntimeDir "$HTTPD_DIR"
			ErrorLog "$HTTPD_DIR/error.log"
			LogLevel warn
			LoadModule mpm_prefork_module $m/mod_mpm_prefork.so
			LoadModule authz_core_module $m/mod_authz_core.so
			LoadModule authz_user_module $m/mod_authz_user.so
			LoadModule authn_core_module $m/mod_authn_core.so
			LoadModule authn_file_module $m/mod_authn_file.so
			LoadModule auth_basic_module $m/mod_auth_basic.so
			LoadModule alias_module $m/mod_alias.so
			LoadModule cgi_module $m/mod_cgi.so
			LoadModule env_module $m/mod_env.so
			SetEnv GIT_PROJECT_ROOT "$HTTPD_ROOT"
			SetEnv GIT_HTTP_EXPORT_ALL 1
			SetEnv HOME "$HTTPD_DIR/home"
			ScriptAlias /pw/ "$HTTPD_DIR/pw-backend/"
			ScriptAlias /pw-open/ "$HTTPD_DIR/pw-backend/"
			ScriptAlias /git/ "$HTTPD_DIR/git-backend/"
			ScriptAlias /git-open/ "$HTTPD_DIR/git-backend/"
			<If "%{REQUEST_URI} =~ m#^/(pw|git)/# && (%{QUERY_STRING} =~ /service=git-receive-pack/ || %{REQUEST_URI} =~ m#/git-receive-pack\$#)">
				AuthType Basic
				AuthName "git"
				AuthUserFile "$HTTPD_DIR/htpasswd"
				Require valid-user
			</If>
			${HTTPD_EXTRA_CONF:-}
		CONF
		if [ "$(id -u)" -eq 0 ]; then
			# (symbolic links in ROOT are not followed: what they point
			# at stays as it is, readable only)
			chown -R nobody:nogroup "$HTTPD_DIR" "$HTTPD_ROOT"
			as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
		fi
		"${as[@]}" "$HTTPD_BIN" -X -f "$HTTPD_DIR/httpd.conf" 2>>"$HTTPD_DIR/start.log" &
		HTTPD_PID=$!
		for _ in $(seq 1 100); do
			if curl -s -o /dev/null "http://127.0.0.1:$HTTPD_PORT/"; then
				return 0
			fi
			kill -0 "$HTTPD_PID" 2>/dev/null || break
			sleep 0.1
		done
		stop_httpd
	done
	echo "could not start $HTTPD_BIN:" >&2
	cat "$HTTPD_DIR/start.log" "$HTTPD_DIR/error.log" >&2 2>/dev/null || true
	return 1
}

# own ROOT: after the test changed files in the served tree as root
own_httpd_root() {
	[ "$(id -u)" -ne 0 ] || chown -R nobody:nogroup "$HTTPD_ROOT"
}
