#!/bin/bash
# pack.compression, pack.window and pack.depth are honoured by every pack
# packwire writes, not only by pack-objects: upload-pack (a stock git clone
# from packwire upload-pack) and push (packwire push to stock git
# receive-pack), SHA-1 and SHA-256. The source objects are loose, so nothing
# is reused from an existing pack and every setting shows in the result.
. "$(dirname "$0")/lib.sh"

# src ALGO: a repository of loose objects whose files delta well
make_src() {
	local dir=$1 algo=$2 i
	git init -q --object-format="$algo" "$dir"
	for i in $(seq 1 12); do
		seq 1 400 | sed "s/^/file $i line /" >"$dir/f$i.txt"
		seq 1 $((i * 3)) >>"$dir/f$i.txt"
	done
	git -C "$dir" add -A && git -C "$dir" commit -q -m one
	for c in 1 2 3 4 5; do
		for i in $(seq 1 12); do echo "more $i $c" >>"$dir/f$i.txt"; done
		git -C "$dir" commit -q -am "change $c"
	done
}

# clone_from SRC DST: git clone served by packwire upload-pack
clone_from() {
	local src=$1 dst=$2
	git clone -q --bare --no-local --upload-pack="$PACKWIRE upload-pack" "file://$src" "$dst"
}
pack_size() { stat -c %s "$1"/objects/pack/*.pack; }
# deltas DIR: number of objects stored as deltas; max_chain DIR: longest chain
deltas() { (cd "$1" && git verify-pack -v objects/pack/*.idx) | awk 'NF >= 7 && $3 ~ /^[0-9]+$/ && $6 ~ /^[0-9]+$/ {n++} END {print n + 0}'; }
max_chain() { (cd "$1" && git verify-pack -v objects/pack/*.idx) | awk '/^chain length = / {v = $4 + 0; sub(":", "", v); if (v > m) m = v} END {print m + 0}'; }

for algo in sha1 sha256; do
	src=$T/src-$algo
	make_src "$src" "$algo"
	git -C "$src" config gc.auto 0

	clone_from "$src" "$T/plain-$algo.git"
	plain_size=$(pack_size "$T/plain-$algo.git")
	plain_deltas=$(deltas "$T/plain-$algo.git")
	check "$algo: a default clone has deltas ($plain_deltas)" test "$plain_deltas" -gt 0
	plain_chain=$(max_chain "$T/plain-$algo.git")
	check "$algo: and delta chains longer than 1 ($plain_chain)" test "$plain_chain" -gt 1

	git -C "$src" config pack.compression 0
	clone_from "$src" "$T/z0-$algo.git"
	z0_size=$(pack_size "$T/z0-$algo.git")
	check "$algo: upload-pack honours pack.compression=0 ($z0_size > $plain_size bytes)" \
		test "$z0_size" -gt "$plain_size"
	check "$algo: that clone is sound" fsck_ok "$T/z0-$algo.git"
	git -C "$src" config --unset pack.compression

	git -C "$src" config core.compression 0
	clone_from "$src" "$T/core0-$algo.git"
	check "$algo: upload-pack honours core.compression=0" \
		test "$(pack_size "$T/core0-$algo.git")" -gt "$plain_size"
	git -C "$src" config pack.compression 9
	clone_from "$src" "$T/core0p9-$algo.git"
	check "$algo: pack.compression wins over core.compression" \
		test "$(pack_size "$T/core0p9-$algo.git")" -lt "$z0_size"
	git -C "$src" config --unset pack.compression
	git -C "$src" config --unset core.compression

	git -C "$src" config pack.window 0
	clone_from "$src" "$T/w0-$algo.git"
	check "$algo: upload-pack honours pack.window=0 (no deltas)" \
		test "$(deltas "$T/w0-$algo.git")" -eq 0
	git -C "$src" config --unset pack.window

	git -C "$src" config pack.depth 1
	clone_from "$src" "$T/d1-$algo.git"
	check "$algo: upload-pack honours pack.depth=1 (longest chain $(max_chain "$T/d1-$algo.git"))" \
		test "$(max_chain "$T/d1-$algo.git")" -le 1
	git -C "$src" config --unset pack.depth

	# push: the pack packwire sends, kept as it is by the receiver
	for setting in default z0; do
		dst=$T/push-$setting-$algo.git
		git init -q --bare --object-format="$algo" "$dst"
		git -C "$dst" config receive.unpackLimit 1
		cfg=()
		[ $setting = z0 ] && cfg=(-c pack.compression=0)
		(cd "$src" && GIT_DIR=.git $PACKWIRE "${cfg[@]}" push -q "$dst" main:main) \
			>"$T/push.out" 2>&1 || { cat "$T/push.out"; not_ok "$algo: push ($setting)"; }
	done
	check "$algo: push honours pack.compression=0" \
		test "$(pack_size "$T/push-z0-$algo.git")" -gt "$(pack_size "$T/push-default-$algo.git")"
	check "$algo: the pushed repository is sound" fsck_ok "$T/push-z0-$algo.git"
done
finish
