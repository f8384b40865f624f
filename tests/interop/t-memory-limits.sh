# Hostile packs and requests under a small address-space limit (issue 17):
# index-pack, receive-pack, upload-pack and the object database's readers
# each answer with a clear error, never an allocation failure or a kill.
# Bounds and their errors are listed in docs/limits.md.
. "$(dirname "$0")/lib.sh"

BP=$PW_SRC/tests/interop/badpack.py
# The limit: a few hundred MB of address space. Sanitizer builds reserve
# terabytes of shadow memory and cannot run under RLIMIT_AS; there ASan's own
# cap on one allocation stands in for it.
LIMIT_KB=${PW_MEMORY_LIMIT_KB:-400000}
if sanitized; then
	limited() { ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}max_allocation_size_mb=$((LIMIT_KB / 1024)):allocator_may_return_null=0 "$@"; }
	echo "# sanitizer build: one allocation capped at $((LIMIT_KB / 1024)) MB instead of ulimit -v"
else
	limited() { (ulimit -v "$LIMIT_KB" && exec "$@"); }
fi

# refused NAME STATUS ERRFILE PATTERN: the command failed cleanly (an exit
# status, not a signal), said PATTERN, and no allocation failed
refused() {
	local name=$1 st=$2 errf=$3 pat=$4
	if [ "$st" -eq 0 ] || [ "$st" -gt 128 ]; then
		not_ok "$name: exit status $st (want a clean failure)"
		sed 's/^/    /' "$errf" | head -5
	elif grep -Eqi 'cannot allocate|out of memory|malloc|AddressSanitizer|Killed' "$errf"; then
		not_ok "$name: an allocation failed"
		sed 's/^/    /' "$errf" | head -5
	elif ! grep -Eq -- "$pat" "$errf"; then
		not_ok "$name: no '$pat' in the error"
		sed 's/^/    /' "$errf" | head -5
	else
		ok "$name"
	fi
}

# run_refused NAME PATTERN CMD...: run CMD under the limit (stdin from the
# caller) and expect a refusal
run_refused() {
	local name=$1 pat=$2 st=0
	shift 2
	limited "$@" >"$T/out" 2>"$T/err" || st=$?
	refused "$name" "$st" "$T/err" "$pat"
}

# pkt-line request writer: each argument a line ("0000" a flush, "0001" a
# delim, a literal \0 a NUL); "@FILE" appends FILE's bytes raw
req() {
	python3 - "$@" <<'EOF'
import sys
out = sys.stdout.buffer
for a in sys.argv[1:]:
    if a in ("0000", "0001"):
        out.write(a.encode())
    elif a.startswith("@"):
        out.write(open(a[1:], "rb").read())
    else:
        b = a.replace("\\0", "\0").encode() + b"\n"
        out.write(b"%04x" % (len(b) + 4) + b)
EOF
}

PACKS="delta-oom delta-oom-base huge-entry big-entry huge-delta-entry big-delta-entry
	big-ref-delta-entry huge-count bomb-big bomb bomb-delta"
declare -A WHY=(
	[delta-oom]="do not produce the result size"
	[delta-oom-base]="do not produce the result size"
	[huge-entry]="size varint too long"
	[big-entry]="inflates to .* but its header declares"
	[huge-delta-entry]="size varint too long"
	[big-delta-entry]="inflates to .* but its header declares"
	[big-ref-delta-entry]="inflates to .* but its header declares"
	[huge-count]="claims 4294967295 objects"
	[bomb-big]="inflates to .* but its header declares"
	[bomb]="inflates to more than"
	[bomb-delta]="inflates to more than"
)

for algo in sha1 sha256; do
	d=$T/$algo
	mkdir -p "$d"
	zero=$(printf '%0*d' $([ $algo = sha1 ] && echo 40 || echo 64) 0)

	# ---- index-pack: a file, and --stdin into a repository ----------------
	git init -q --bare --object-format=$algo "$d/ip.git"
	for c in $PACKS; do
		python3 "$BP" $algo $c "$d/$c.pack"
		run_refused "$algo index-pack $c" "${WHY[$c]}" \
			"$PACKWIRE" index-pack --object-format=$algo -o "$d/$c.idx" "$d/$c.pack"
		(cd "$d/ip.git" && run_refused "$algo index-pack --stdin $c" "${WHY[$c]}" \
			"$PACKWIRE" index-pack --stdin <"$d/$c.pack")
	done

	# ---- receive-pack: the same packs pushed ------------------------------
	make_repo "$d/src" $algo
	git clone -q --bare "$d/src" "$d/recv.git"
	new=$(git -C "$d/src" rev-parse HEAD~1)
	for c in $PACKS; do
		req "$zero $new refs/heads/hostile-$c\0report-status side-band-64k object-format=$algo" 0000 "@$d/$c.pack" \
			>"$d/push-$c.in"
		st=0
		(cd "$d/recv.git" && limited "$PACKWIRE" receive-pack --stateless-rpc . \
			<"$d/push-$c.in" >"$d/push.out" 2>"$d/push.err") || st=$?
		# the error goes to the client as "unpack <why>"; exit 0 is fine here
		cat "$d/push.out" >>"$d/push.err"
		[ "$st" -eq 0 ] && st=1 && grep -q "unpack ok" "$d/push.out" && st=0
		refused "$algo receive-pack $c" "$st" "$d/push.err" "unpack "
	done
	check "$algo receive-pack: no hostile ref was created" \
		[ -z "$(git -C "$d/recv.git" for-each-ref refs/heads/hostile-*)" ]

	# receive.maxInputSize: a pack larger than the limit is refused as it streams
	git -C "$d/src" repack -q -a -d
	big=$(ls "$d/src"/.git/objects/pack/*.pack | head -1)
	req "$zero $new refs/heads/limited\0report-status object-format=$algo" 0000 "@$big" >"$d/push-max.in"
	st=0
	(cd "$d/recv.git" && limited "$PACKWIRE" -c receive.maxInputSize=200 receive-pack \
		--stateless-rpc . <"$d/push-max.in" >"$d/push.out" 2>"$d/push.err") || st=$?
	cat "$d/push.out" >>"$d/push.err"
	[ "$st" -eq 0 ] && st=1
	refused "$algo receive-pack over receive.maxInputSize" "$st" "$d/push.err" "unpack .*(too large|maxInputSize|exceeds)"

	# hostile commands: a 60 kB ref name, a 60 kB capability list
	long=$(head -c 60000 /dev/zero | tr '\0' a)
	req "$zero $new refs/heads/$long\0report-status object-format=$algo" 0000 >"$d/push-long.in"
	(cd "$d/recv.git" && run_refused "$algo receive-pack: 60 kB ref name" "." \
		"$PACKWIRE" receive-pack --stateless-rpc . <"$d/push-long.in")
	# a pkt-line header claiming more than its body holds
	printf '%s' "fff0$zero" >"$d/short.in"
	(cd "$d/recv.git" && run_refused "$algo receive-pack: truncated pkt-line" "." \
		"$PACKWIRE" receive-pack --stateless-rpc . <"$d/short.in")

	# config values: a window of two billion objects costs what the objects do
	st=0
	(cd "$d/src" && limited "$PACKWIRE" -c pack.window=2000000000 pack-objects --all --stdout \
		</dev/null >"$d/win.pack" 2>"$d/win.err") || st=$?
	check "$algo pack-objects: pack.window=2000000000 within the limit" [ $st -eq 0 -a -s "$d/win.pack" ]

	# ---- upload-pack: hostile requests ------------------------------------
	head=$(git -C "$d/src" rev-parse HEAD)
	# 200,000 made-up haves (8.6 MB) in one v0 round
	python3 - $algo "$head" >"$d/haves.in" <<'EOF'
import hashlib, sys
algo, head = sys.argv[1], sys.argv[2]
H = hashlib.sha1 if algo == "sha1" else hashlib.sha256
out = sys.stdout.buffer
def pkt(s): b = s.encode(); out.write(b"%04x" % (len(b) + 4) + b)
pkt("want %s multi_ack_detailed side-band-64k ofs-delta\n" % head)
out.write(b"0000")
for i in range(200000):
    pkt("have %s\n" % H(b"%d" % i).hexdigest())
pkt("done\n")
EOF
	st=0
	(cd "$d/src" && limited "$PACKWIRE" upload-pack --stateless-rpc . <"$d/haves.in" \
		>"$d/up.out" 2>"$d/up.err") || st=$?
	check "$algo upload-pack: 200,000 unknown haves, then a pack" \
		[ $st -eq 0 -a -s "$d/up.out" ]
	# more lines than a v2 request may hold (PW_V2_REQUEST_MAX_LINES), each
	# as short as a line can be
	python3 - >"$d/v2-many.in" <<'EOF'
import sys
out = sys.stdout.buffer
out.write(b"0012command=fetch\n0001" + b"0006x\n" * ((1 << 21) + 10) + b"0000")
EOF
	(cd "$d/src" && GIT_PROTOCOL=version=2 run_refused "$algo upload-pack v2: 2M+ request lines" \
		"too many|too large|lines" "$PACKWIRE" upload-pack --stateless-rpc . <"$d/v2-many.in")
	# unknown capabilities are ignored, as git does; the pkt-line bounds them
	caps=$(head -c 65400 /dev/zero | tr '\0' c)
	req "want $head $caps" 0000 "done" >"$d/caps.in"
	st=0
	(cd "$d/src" && limited "$PACKWIRE" upload-pack --stateless-rpc . <"$d/caps.in" \
		>"$d/up.out" 2>"$d/up.err") || st=$?
	check "$algo upload-pack: a 65 kB capability list is served" [ $st -eq 0 -a -s "$d/up.out" ]
	printf 'fff0want %s' "$head" >"$d/short.in"
	(cd "$d/src" && run_refused "$algo upload-pack: truncated pkt-line" "." \
		"$PACKWIRE" upload-pack --stateless-rpc . <"$d/short.in")

	# ---- the odb's readers: hostile objects that index-pack never saw -----
	git init -q --bare --object-format=$algo "$d/odb.git"
	python3 "$BP" $algo odb-hostile "$d/odb.git/objects/pack/pack-hostile.pack" >"$d/ids"
	declare -A ODB=(
		[delta-oom]="result is 5 bytes but the header says 2400000000"
		[delta-over-empty]="delta: instruction truncated"
		[huge-entry]="size varint too long"
		[huge-delta]="size varint too long"
		[big-entry]="too large"
		[big-delta]="too large"
		[claim-40m]="claims an impossible size"
	)
	while read -r name id; do
		[ "$name" = empty ] || [ "$name" = padding ] && continue
		(cd "$d/odb.git" && run_refused "$algo cat-file -p $name" "${ODB[$name]}" \
			"$PACKWIRE" cat-file -p "$id")
		rm -rf "$d/u.git"
		cp -r "$d/odb.git" "$d/u.git"
		echo "$id refs/heads/main" >"$d/u.git/packed-refs"
		req "want $id side-band-64k ofs-delta" 0000 "done" >"$d/want.in"
		if [ "$name" = claim-40m ]; then
			# a blob: upload-pack may send its entry verbatim without
			# inflating it; it must only not fall over
			st=0
			(cd "$d/u.git" && limited "$PACKWIRE" upload-pack --stateless-rpc . \
				<"$d/want.in" >"$d/up.out" 2>"$d/up.err") || st=$?
			grep -Eqi 'cannot allocate|out of memory' "$d/up.err" && st=255
			check "$algo upload-pack of $name: no allocation failure, no kill" [ $st -lt 128 ]
			continue
		fi
		(cd "$d/u.git" && run_refused "$algo upload-pack of $name" "${ODB[$name]}" \
			"$PACKWIRE" upload-pack --stateless-rpc . <"$d/want.in")
		st=0
		limited git clone -q --bare --upload-pack="$PACKWIRE upload-pack" "file://$d/u.git" \
			"$d/clone-$name" >"$d/clone.out" 2>"$d/clone.err" || st=$?
		refused "$algo git clone from packwire upload-pack: $name" "$st" "$d/clone.err" \
			"${ODB[$name]}"
	done <"$d/ids"
done
finish
