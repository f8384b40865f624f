#!/bin/bash
# clone/fetch --shallow-since and --shallow-exclude by packwire and by stock
# git over the network transports: git:// against git daemon and packwire
# daemon, smart HTTP (stateless) against packwire serve and Apache with git
# http-backend, protocol v0 and v2, SHA-1 and SHA-256: the same shallow
# file, rev-list --all and refs (shallow-lib.sh), and the packwire servers
# cut as git upload-pack does over file://.
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
. "$(dirname "$0")/http-lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/shallow-lib.sh"
trap 'stop_daemons; stop_serves; http_cleanup' EXIT

fronts="git-daemon pw-daemon pw-serve"
if need_httpd; then
	fronts="$fronts git-http-backend pw-http-backend"
else
	skip "git and packwire http-backend under Apache (apache2, curl or openssl missing)"
fi

mkdir -p "$T/srv"
for algo in sha1 sha256; do
	make_dated_repo "$T/src-$algo" "$algo"
	git clone -q --bare "$T/src-$algo" "$T/srv/$algo.git"
	touch "$T/srv/$algo.git/git-daemon-export-ok"
done

GD=$(free_port)
start_daemon gitd git "$GD" --base-path="$T/srv"
PD=$(free_port)
start_daemon pwd pw "$PD" --base-path="$T/srv"
start_serve serve "$T/srv" --quiet
SERVE=http://127.0.0.1:$SERVE_PORT
case $fronts in *http-backend*) start_httpd "$T/srv" ;; esac

PW_UP=() GIT_UP=()
for algo in sha1 sha256; do
	# the reference: git against git upload-pack over file://
	REF_DIR=
	shallow_clones "$algo/reference" "file://$T/srv/$algo.git" 2 git 1
	REF_DIR=$T/sh-$algo-reference
	for front in $fronts; do
		case $front in
		git-daemon) url=git://127.0.0.1:$GD/$algo.git server=git ;;
		pw-daemon) url=git://127.0.0.1:$PD/$algo.git server=packwire ;;
		pw-serve) url=$SERVE/$algo.git server=packwire ;;
		git-http-backend) url=http://127.0.0.1:$HTTPD_PORT/git-open/$algo.git server=git ;;
		pw-http-backend) url=http://127.0.0.1:$HTTPD_PORT/pw-open/$algo.git server=packwire ;;
		esac
		for v in 0 2; do
			full=0
			case $front in pw-serve | git-http-backend) full=1 ;; esac
			shallow_clones "$algo/$front/v$v" "$url" $v $server $full
		done
	done
done
daemon_logs_clean
serve_logs_clean serve

finish
