#!/bin/bash
# `packwire push --force-with-lease` against `git push` over the network
# transports: git:// against `git daemon` and `packwire daemon` (receive-pack
# enabled), smart HTTP against `packwire serve` and Apache with `git
# http-backend` (CGI), SHA-1 and SHA-256: the core scenarios of
# lease-lib.sh, each compared with git push in the same situation (exit
# status, output, refs, commands the server got, fsck).
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
. "$(dirname "$0")/http-lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/lease-lib.sh"
trap 'stop_daemons; stop_serves; http_cleanup' EXIT

mkdir -p "$T/srv"
fronts="git-daemon pw-daemon pw-serve"
if need_httpd; then
	fronts="$fronts git-http-backend"
else
	skip "git http-backend under Apache (apache2, curl or openssl missing)"
fi

# the repositories first: Apache hands the tree to its user when it starts
for algo in sha1 sha256; do
	for front in $fronts; do
		D=$T/srv/$algo-$front
		mkdir -p "$D"
		for s in srv-a srv-b; do
			git init -q --bare --object-format="$algo" "$D/$s.git"
			git -C "$D/$s.git" config http.receivepack true
			git -C "$D/$s.git" config daemon.receivepack true
		done
		make_repo "$T/c-$algo-$front-a" "$algo" 2>/dev/null
		cp -a "$T/c-$algo-$front-a" "$T/c-$algo-$front-b"
	done
done

GD=$(free_port)
start_daemon gitd git "$GD" --base-path="$T/srv" --export-all --enable=receive-pack
PD=$(free_port)
start_daemon pwd pw "$PD" --base-path="$T/srv" --export-all --enable=receive-pack
start_serve serve "$T/srv" --quiet
SERVE=http://127.0.0.1:$SERVE_PORT
case $fronts in *git-http-backend*)
	start_httpd "$T/srv"
	srv_changed() { own_httpd_root; }
	;;
esac

for algo in sha1 sha256; do
	for front in $fronts; do
		case $front in
		git-daemon) base=git://127.0.0.1:$GD ;;
		pw-daemon) base=git://127.0.0.1:$PD ;;
		pw-serve) base=$SERVE ;;
		git-http-backend) base=http://127.0.0.1:$HTTPD_PORT/git-open ;;
		esac
		SA=$T/srv/$algo-$front/srv-a.git SB=$T/srv/$algo-$front/srv-b.git
		CA=$T/c-$algo-$front-a CB=$T/c-$algo-$front-b
		UA=("$base/$algo-$front/srv-a.git") UB=("$base/$algo-$front/srv-b.git")
		git -C "$CA" remote add origin "${UA[0]}"
		git -C "$CB" remote add origin "${UB[0]}"
		lease_scenarios "$algo/$front" 0
	done
done
daemon_logs_clean
serve_logs_clean serve

finish
