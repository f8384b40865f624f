#!/usr/bin/env bash
# The pack cache through Apache + `packwire http-backend` (CGI), with
# uploadpack.packCache in the global config the CGI sees: stock git clones
# (full, --depth=1, --filter=blob:none) and a fetch of one new commit,
# SHA-1 and SHA-256, protocol v0 and v2. The first request makes an entry;
# the second uses it (the entry is the same file, and its time of last use,
# set back before, is renewed) and no other is made; every result is
# fsck-clean with the objects of a clone made without the cache. After a
# push the next clone has the pushed commit.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-lib.sh"

if ! need_httpd; then
	skip "apache2 (apache2-bin), curl or openssl missing: scripts/install-deps.sh installs them"
	finish
fi

same_objects() { diff <(all_objects "$1") <(all_objects "$2") >/dev/null; }
entries() { { find "$1" -name "*.pack" 2>/dev/null || true; } | wc -l; }
newest() { ls -t "$1"/*.pack | head -1; }

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare --no-local "src-$algo" "pristine-$algo.git"
	git -C "pristine-$algo.git" config uploadpack.allowFilter true
	git clone -q --bare --no-local "pristine-$algo.git" "ref-full-$algo.git"
	git clone -q --bare --depth=1 "file://$T/pristine-$algo.git" "ref-depth-$algo.git"
	git clone -q --bare --filter=blob:none "file://$T/pristine-$algo.git" "ref-filter-$algo.git"
	for v in 0 2; do
		git clone -q --bare "pristine-$algo.git" "srv/$algo-v$v.git"
		git -C "srv/$algo-v$v.git" config uploadpack.allowFilter true
	done
done
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT/pw
C=$HTTPD_DIR/pack-cache # the CGI's user makes it
printf '[uploadpack]\n\tpackCache = %s\n\tpackCacheMax = 100m\n' "$C" >>"$HTTPD_DIR/home/.gitconfig"

# one REQUEST-NAME REFERENCE GIT-ARGS...: two identical requests, the second
# served from the first one's entry
one() {
	local n=$1 ref=$2 before e ino
	shift 2
	before=$(entries "$C")
	"$@" "$n-a.git" 2>"$n-a.err" || { not_ok "$n: first"; cat "$n-a.err"; }
	check "$n: the first request made an entry" test "$(entries "$C")" = $((before + 1))
	e=$(newest "$C")
	ino=$(stat -c %i "$e")
	touch -d '1 hour ago' "$e"
	"$@" "$n-b.git" 2>"$n-b.err" || { not_ok "$n: second"; cat "$n-b.err"; }
	check "$n: the second used it (no new entry, the same file)" \
		test "$(entries "$C") $(stat -c %i "$e")" = "$((before + 1)) $ino"
	check "$n: ... its time of last use renewed" test "$(($(date +%s) - $(stat -c %Y "$e")))" -lt 600
	for c in a b; do
		check "$n: $c is fsck-clean, same objects as without the cache" \
			eval "fsck_ok $n-$c.git && same_objects $n-$c.git $ref"
	done
}

for algo in sha1 sha256; do
	for v in 0 2; do
		R=$U/$algo-v$v.git
		g=(git -c protocol.version=$v clone -q --bare)
		one "hb-$algo-v$v-full" "ref-full-$algo.git" "${g[@]}" "$R"
		one "hb-$algo-v$v-depth" "ref-depth-$algo.git" "${g[@]}" --depth=1 "$R"
		one "hb-$algo-v$v-filter" "ref-filter-$algo.git" "${g[@]}" --filter=blob:none "$R"

		# a fetch of one new commit into two identical clones
		n=hb-$algo-v$v-fetch
		git clone -q --bare --no-local "srv/$algo-v$v.git" "$n-a.git"
		git clone -q --bare --no-local "srv/$algo-v$v.git" "$n-b.git"
		w=$T/$n-work
		git clone -q "srv/$algo-v$v.git" "$w"
		git -C "$w" commit -q --allow-empty -m "one more"
		git -C "$w" push -q origin HEAD:main
		own_httpd_root
		before=$(entries "$C")
		git -C "$n-a.git" -c protocol.version=$v fetch -q "$R" '+refs/heads/*:refs/heads/*'
		e=$(newest "$C")
		touch -d '1 hour ago' "$e"
		git -C "$n-b.git" -c protocol.version=$v fetch -q "$R" '+refs/heads/*:refs/heads/*'
		check "$n: one entry for the two fetches, used by the second" \
			test "$(entries "$C") $(($(date +%s) - $(stat -c %Y "$e") < 600))" = "$((before + 1)) 1"
		for c in a b; do
			check "$n: fetch $c is fsck-clean with the new commit" \
				eval "fsck_ok $n-$c.git && same_refs $n-$c.git srv/$algo-v$v.git"
		done

		# after a push the clone has what was pushed
		n=hb-$algo-v$v-push
		git -c protocol.version=$v clone -q --bare "$R" "$n-a.git"
		git -C "$w" commit -q --allow-empty -m "pushed"
		git -C "$w" push -q origin HEAD:main
		own_httpd_root
		git -c protocol.version=$v clone -q --bare "$R" "$n-b.git"
		check "$n: the clone after a push has it, fsck-clean" \
			eval "fsck_ok $n-b.git && same_refs $n-b.git srv/$algo-v$v.git"
	done
done
check "no generation left behind" test -z "$(find "$C" -name '*.part')"
check "the CGI logged no error" eval "! grep -q 'pack cache' $HTTPD_DIR/error.log"

finish
