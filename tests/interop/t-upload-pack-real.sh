#!/bin/bash
# packwire upload-pack serving real history (git v1.5.0, from ../shared/data)
# to stock git clone over file://, once per algorithm and protocol version:
# fsck --strict, same refs, every object.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

# real history, once per algorithm and protocol
require_data "real-history clones"
for algo in sha1 sha256; do
	D=$(data_repo small "$algo")
	want=$(git -C "$D" rev-list --objects --all | wc -l)
	for v in 0 1 2; do
		w="$algo v$v real history"
		git -c protocol.version=$v clone -q --bare --upload-pack="$UP" "file://$D" "$T/real-$algo-$v" 2>"$T/err" ||
			{ not_ok "$w: clone"; cat "$T/err"; continue; }
		check "$w: fsck --strict" fsck_ok "$T/real-$algo-$v"
		check "$w: same refs" same_refs "$D" "$T/real-$algo-$v"
		got=$(all_objects "$T/real-$algo-$v" | wc -l)
		if [ "$got" -eq "$want" ]; then ok "$w: $got objects"; else not_ok "$w: $got objects, want $want"; fi
		rm -rf "$T/real-$algo-$v"
	done
done
finish
