# Helpers for the t-daemon-*.sh tests (sourced after lib.sh): daemons on
# free 127.0.0.1 ports, started with --pid-file and stopped by pid when the
# test ends (whatever way it ends).

DAEMON_PIDS=()
stop_daemons() {
	local p
	for p in "${DAEMON_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${DAEMON_PIDS[@]}"; do
		# our own children: wait reaps them; others: poll until gone
		wait "$p" 2>/dev/null || true
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done
	DAEMON_PIDS=()
}
trap stop_daemons EXIT

# daemon_logs_clean: no sanitizer report in any daemon log of this test (the
# per-connection children log to the daemon's stderr)
daemon_logs_clean() {
	if grep -l "Sanitizer" "$T"/*.log >/dev/null 2>&1; then
		not_ok "daemon logs free of sanitizer reports"
		grep -h -A20 "Sanitizer" "$T"/*.log | head -40
	else
		ok "daemon logs free of sanitizer reports"
	fi
}

# free_port: a TCP port nothing listens on now
free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_daemon NAME KIND PORT ARGS...: KIND is pw or git; logs to $T/NAME.log,
# pid in $T/NAME.pid and DAEMON_PIDS; returns once it listens.
start_daemon() {
	local name=$1 kind=$2 port=$3 i
	shift 3
	rm -f "$T/$name.pid"
	if [ "$kind" = pw ]; then
		"$PACKWIRE" daemon --listen=127.0.0.1 --port="$port" --pid-file="$T/$name.pid" \
			--reuseaddr "$@" 2>"$T/$name.log" &
	else
		git daemon --listen=127.0.0.1 --port="$port" --pid-file="$T/$name.pid" \
			--reuseaddr "$@" 2>"$T/$name.log" &
	fi
	DAEMON_PIDS+=($!)
	for i in $(seq 1 100); do
		# the pid file is written once the socket listens
		[ -s "$T/$name.pid" ] && return 0
		sleep 0.05
	done
	echo "daemon $name did not start:" >&2
	cat "$T/$name.log" >&2
	return 1
}

# unport FILE: the same text with this test's ports replaced by PORT, and
# packwire's agent by git's (so outputs compare)
unport() { sed -E 's/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g' "$1"; }

# same_msgs DESC GITFILE PWFILE: messages equal once ports are masked
same_msgs() {
	if diff <(unport "$2") <(unport "$3") >/dev/null; then ok "$1"; else
		not_ok "$1"
		diff -u <(unport "$2") <(unport "$3") | head -20 || true
	fi
}
