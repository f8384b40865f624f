#!/usr/bin/env bash
# packwire's dumb HTTP client against a lying server (tests/interop/dumb-hostile.py),
# both algorithms: garbage info/refs, ids of a bad or mixed length, a garbage
# HEAD, a pack name that climbs out of objects/pack, a truncated pack, an
# .idx of the other algorithm, a missing object, a loose object that is
# another object, an alternates loop, a loose object that declares (and
# inflates to) 512 MiB, checked with a bound on peak memory. Each is a clear
# error; a clone leaves no directory, a fetch leaves refs and objects as
# they were (no quarantine left behind).
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY

cd "$T"
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo" >/dev/null 2>&1
	git clone -q --bare "src-$algo" "srv-$algo.git"
	git -C "srv-$algo.git" update-server-info
	git init -q --object-format="$algo" "local-$algo"
done

SRVS=()
trap 'for p in "${SRVS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done' EXIT
for algo in sha1 sha256; do
	other=sha256
	[ $algo = sha1 ] || other=sha1
	python3 "$PW_SRC/tests/interop/dumb-hostile.py" "$T/port-$algo" "$T/srv-$algo.git" \
		"$T/srv-$other.git" &
	SRVS+=($!)
done
for algo in sha1 sha256; do
	for _ in $(seq 1 100); do [ -f "$T/port-$algo" ] && break; sleep 0.1; done
done

state() { git -C "$1" for-each-ref; all_objects "$1"; ls "$1/.git/objects"; }

# hostile ALGO MODE MESSAGE [options]: clone and fetch fail with MESSAGE,
# nothing written
hostile() {
	local algo=$1 mode=$2 msg=$3 rc u c
	shift 3
	u=http://127.0.0.1:$(cat "$T/port-$algo")/$mode/a.git
	c=clone-$algo-$mode
	"$PACKWIRE" "$@" clone -q "$u" "$c" 2>"$c.err" && rc=0 || rc=$?
	check "$algo $mode: clone fails" test "$rc" -ne 0
	contains "$algo $mode: clone's message" "$c.err" "$msg"
	check "$algo $mode: no directory left by the clone" test ! -e "$c"
	state "local-$algo" >before
	"$PACKWIRE" -C "local-$algo" "$@" fetch -q "$u" 'refs/heads/*:refs/remotes/x/*' \
		2>"fetch-$c.err" && rc=0 || rc=$?
	check "$algo $mode: fetch fails" test "$rc" -ne 0
	contains "$algo $mode: fetch's message" "fetch-$c.err" "$msg"
	state "local-$algo" >after
	same_file "$algo $mode: refs and objects unchanged by the fetch" before after
}

for algo in sha1 sha256; do
	U=http://127.0.0.1:$(cat "$T/port-$algo")
	check "$algo: the honest server clones" "$PACKWIRE" clone -q --bare "$U/ok/a.git" "ok-$algo"
	check "$algo: the honest clone is fsck --strict clean" fsck_ok "ok-$algo"
	check "$algo: the honest clone has the refs" same_refs "ok-$algo" "srv-$algo.git"
	hostile $algo garbage "fatal: dumb HTTP: info/refs line 1: not '<object id> TAB <ref name>'"
	hostile $algo badlen "an object id of 50 hex digits is neither SHA-1 (40) nor SHA-256 (64)"
	hostile $algo mixedlen "info/refs line 2: not a SHA-1 object id like the first line's"
	hostile $algo badhead "dumb HTTP: HEAD line 1: neither 'ref: <name>' nor an object id"
	hostile $algo badpacks "objects/info/packs line 1: not 'P pack-<"
	hostile $algo truncpack "fatal: dumb HTTP: pack $U/truncpack/a.git/objects/pack/pack-"
	hostile $algo otheridx "indexes $([ $algo = sha1 ] && echo sha256 || echo sha1) objects, but the repository's refs are $algo"
	hostile $algo missing "fatal: dumb HTTP: unable to find $(git -C "srv-$algo.git" rev-parse HEAD:loose.txt) under $U/missing/a.git"
	hostile $algo badloose "holds object $(git -C "srv-$algo.git" rev-parse HEAD), not $(git -C "srv-$algo.git" rev-parse HEAD:loose.txt)"
	hostile $algo altloop "dumb HTTP: alternates loop: $U/altloop/b.git/objects lists $U/altloop/a.git/objects" \
		-c http.followRedirects=true

	# issue 26: 512 KiB of zlib that declares and inflates to a 512 MiB blob
	# (not the object asked for) is hashed while it inflates, never held
	# whole: a clear refusal with a small peak RSS (a resource bound, with
	# room: about 20 MB here, over 512 MB before)
	rm -rf "bomb-$algo"
	/usr/bin/time -f %M -o "bomb-$algo.rss" "$PACKWIRE" clone -q "$U/bomb/a.git" "bomb-$algo" \
		2>"bomb-$algo.err" && rc=0 || rc=$?
	check "$algo bomb: clone fails" test "$rc" -ne 0
	contains "$algo bomb: says which object it got" "bomb-$algo.err" \
		"$U/bomb/a.git/objects/$(git -C "srv-$algo.git" rev-parse HEAD:loose.txt | sed 's|^..|&/|') holds object"
	check "$algo bomb: no directory left" test ! -e "bomb-$algo"
	rss=$(tail -1 "bomb-$algo.rss")
	check "$algo bomb: peak RSS ${rss} KB stays under 200 MB" test "$rss" -lt 204800
done

finish
