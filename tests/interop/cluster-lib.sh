# Helpers for the t-cluster*.sh tests, bench/cluster-push and
# scripts/cluster-demo (sourced after lib.sh and serve-lib.sh): etcd members
# and packwire cluster nodes on free 127.0.0.1 ports, stopped by pid when the
# script ends (serve-lib.sh's trap stops everything in SERVE_PIDS).

# a paused etcd member (kill -STOP) would never see the TERM of the end
trap 'kill -CONT "${ETCD_PIDS[@]}" 2>/dev/null || true; stop_serves' EXIT

have_cluster_tools() {
	command -v etcd >/dev/null && command -v etcdctl >/dev/null
}

# start_etcd N: an etcd cluster of N members in $T/etcd-<i>; ETCD_PIDS[i],
# ETCD_URLS[i], ETCD (etcd:URL,URL,...) and ETCDCTL_ENDPOINTS set. Returns
# once it answers.
ETCD_PIDS=() ETCD_URLS=() ETCD_ARGS=()
start_etcd() {
	local n=$1 i initial="" peers=() c
	for i in $(seq 1 "$n"); do
		ETCD_URLS[i]=http://127.0.0.1:$(free_port)
		peers[i]=http://127.0.0.1:$(free_port)
		initial+="${initial:+,}e$i=${peers[i]}"
	done
	for i in $(seq 1 "$n"); do
		ETCD_ARGS[i]="--name e$i --data-dir $T/etcd-$i --listen-client-urls ${ETCD_URLS[i]}
			--advertise-client-urls ${ETCD_URLS[i]} --listen-peer-urls ${peers[i]}
			--initial-advertise-peer-urls ${peers[i]} --initial-cluster $initial
			--initial-cluster-state new --log-level error"
		# shellcheck disable=SC2086
		etcd ${ETCD_ARGS[i]} >"$T/etcd-$i.log" 2>&1 &
		ETCD_PIDS[i]=$!
		SERVE_PIDS+=($!)
	done
	c=$(printf '%s,' "${ETCD_URLS[@]}")
	ETCDCTL_ENDPOINTS=${c%,}
	ETCD=etcd:$ETCDCTL_ENDPOINTS
	export ETCDCTL_ENDPOINTS ETCDCTL_API=3
	for i in $(seq 1 200); do
		etcdctl --command-timeout=1s put /packwire-test/up 1 >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "etcd did not start" >&2
	cat "$T"/etcd-*.log >&2
	return 1
}

# restart_etcd I: start member I again (its data directory kept)
restart_etcd() {
	# shellcheck disable=SC2086
	etcd ${ETCD_ARGS[$1]} >>"$T/etcd-$1.log" 2>&1 &
	ETCD_PIDS[$1]=$!
	SERVE_PIDS+=($!)
}

# start_node NAME [ARGS...]: a node serving $T/nodes/NAME, in the cluster
# $ETCD; NODE_PORT[NAME], NODE_PID[NAME], NODE_URL[NAME] set.
declare -A NODE_PORT NODE_PID NODE_URL NODE_ARGS
start_node() {
	local name=$1
	shift
	mkdir -p "$T/nodes/$name"
	NODE_ARGS[$name]="$*"
	start_serve "node-$name" "$T/nodes/$name" --cluster="$ETCD" --node="$name" --quiet "$@"
	NODE_PORT[$name]=$SERVE_PORT
	NODE_PID[$name]=$SERVE_PID
	NODE_URL[$name]=http://127.0.0.1:$SERVE_PORT
}

# restart_node NAME: the same node on the same port
restart_node() {
	local name=$1 i
	# shellcheck disable=SC2086
	"$PACKWIRE" serve --listen=127.0.0.1 --port="${NODE_PORT[$name]}" \
		--base-path="$T/nodes/$name" --pid-file="$T/node-$name.pid" --cluster="$ETCD" \
		--node="$name" --quiet ${NODE_ARGS[$name]} 2>>"$T/node-$name.log" &
	NODE_PID[$name]=$!
	SERVE_PIDS+=($!)
	for i in $(seq 1 400); do
		curl -s -o /dev/null "${NODE_URL[$name]}/healthz" && return 0
		sleep 0.05
	done
	return 1
}

# wait_ready NAME [SECONDS]: /healthz says 200
wait_ready() {
	local i
	for i in $(seq 1 $((${2:-30} * 10))); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "${NODE_URL[$1]}/healthz")" = 200 ] && return 0
		sleep 0.1
	done
	return 1
}

# etcd_refs NAME: "<hex> <ref>" lines of the repository's refs in etcd, sorted
etcd_refs() {
	etcdctl get --prefix "/packwire/refs/$1:refs/" | paste - - |
		sed -e "s|^/packwire/refs/$1:||" | awk '{ split($2, v, ":"); print v[2], $1 }' | sort
}

# node_refs URL: the same, as ls-remote sees them (HEAD left out)
node_refs() {
	git ls-remote "$1" | grep -v 'HEAD$' | grep -vF '^{}' | awk '{ print $1, $2 }' | sort
}

# start_haproxy: deploy/haproxy.cfg in front of nodes a, b, c; FRONT (the
# front's URL) and STATS (its CSV statistics) set.
start_haproxy() {
	local i
	PW_FRONT=127.0.0.1:$(free_port)
	PW_HAPROXY_STATS=127.0.0.1:$(free_port)
	PW_NODE1=127.0.0.1:${NODE_PORT[a]} PW_NODE2=127.0.0.1:${NODE_PORT[b]} PW_NODE3=127.0.0.1:${NODE_PORT[c]}
	export PW_FRONT PW_HAPROXY_STATS PW_NODE1 PW_NODE2 PW_NODE3
	haproxy -db -f "$PW_SRC/deploy/haproxy.cfg" >"$T/haproxy.log" 2>&1 &
	HAPROXY_PID=$!
	SERVE_PIDS+=($!)
	FRONT=http://$PW_FRONT
	STATS="http://$PW_HAPROXY_STATS/stats;csv"
	for i in $(seq 1 100); do
		curl -s -o /dev/null "$STATS" && return 0
		sleep 0.05
	done
	cat "$T/haproxy.log" >&2
	return 1
}

# front_status NODE: HAProxy's view of node a/b/c ("UP", "DOWN", ...)
front_status() {
	local s
	case $1 in a) s=node1 ;; b) s=node2 ;; c) s=node3 ;; esac
	curl -s "$STATS" | awk -F, -v s="$s" '$1 == "packwire" && $2 == s { print $18 }'
}

# now_ms: milliseconds since the epoch
now_ms() { date +%s%3N; }
