# packwire hash-object agrees with git hash-object in both formats.
. "$(dirname "$0")/lib.sh"

printf 'some content\n' >"$T/f"
for algo in sha1 sha256; do
	want=$(git hash-object --object-format=$algo "$T/f" 2>/dev/null || (cd "$T" && git init -q --object-format=$algo r$algo && git -C r$algo hash-object "$T/f"))
	got=$("$PACKWIRE" hash-object --object-format=$algo "$T/f")
	check "hash-object $algo" [ "$want" = "$got" ]
done
check_fails "unknown format rejected" "$PACKWIRE" hash-object --object-format=md5 "$T/f"
finish
