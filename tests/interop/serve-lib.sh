# Helpers for the t-serve*.sh tests (sourced after lib.sh): `packwire serve`
# on a free 127.0.0.1 port, with --pid-file, stopped by pid when the test
# ends (whatever way it ends).

SERVE_PIDS=()
stop_serves() {
	local p
	for p in "${SERVE_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${SERVE_PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	SERVE_PIDS=()
}
trap stop_serves EXIT
export GIT_TERMINAL_PROMPT=0
unset GIT_ASKPASS SSH_ASKPASS

free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_serve NAME BASE ARGS...: serve BASE; logs to $T/NAME.log, pid in
# $T/NAME.pid and SERVE_PIDS, port in SERVE_PORT; returns once it listens.
start_serve() {
	local name=$1 base=$2 i try
	shift 2
	for try in 1 2 3; do
		SERVE_PORT=$(free_port)
		rm -f "$T/$name.pid"
		"$PACKWIRE" serve --listen=127.0.0.1 --port="$SERVE_PORT" --base-path="$base" \
			--pid-file="$T/$name.pid" "$@" 2>"$T/$name.log" &
		SERVE_PID=$!
		SERVE_PIDS+=($SERVE_PID)
		for i in $(seq 1 100); do
			[ -s "$T/$name.pid" ] && return 0
			kill -0 $SERVE_PID 2>/dev/null || break
			sleep 0.05
		done
		wait $SERVE_PID 2>/dev/null || true
	done
	echo "serve $name did not start:" >&2
	cat "$T/$name.log" >&2
	return 1
}

# stop_serve PID: SIGTERM, then its exit status in SERVE_RC
stop_serve() {
	kill -TERM "$1"
	SERVE_RC=0
	wait "$1" || SERVE_RC=$?
}

# serve_logs_clean NAME: no sanitizer report in the server's log
serve_logs_clean() {
	if grep -q "Sanitizer\|LeakSanitizer" "$T/$1.log"; then
		not_ok "serve $1: log free of sanitizer reports"
		grep -A20 "Sanitizer" "$T/$1.log" | head -40
	else
		ok "serve $1: log free of sanitizer reports"
	fi
}
