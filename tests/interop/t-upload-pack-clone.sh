#!/bin/bash
# packwire upload-pack behind stock git over file://: clone, incremental
# fetch, ls-remote, --depth=1, --filter=blob:none and a tag fetch, in
# protocol v0, v1 and v2, for SHA-1 and SHA-256 repositories. Every result is
# compared with what stock git upload-pack gives for the same request.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

for algo in sha1 sha256; do
	S=$T/src-$algo
	make_repo "$S" "$algo"
	git -C "$S" config uploadpack.allowFilter true
	# lazy fetches of blobs in v0/v1 ask for unadvertised objects
	git -C "$S" config uploadpack.allowAnySHA1InWant true
	for v in 0 1 2; do
		w="$algo v$v file"
		url=$(url_for file "$S")
		G="git -c protocol.version=$v"
		$G clone -q --upload-pack="$UP" "$url" "$T/pw-$algo-$v" 2>"$T/err" ||
			{ not_ok "$w: clone"; cat "$T/err"; continue; }
		$G clone -q "$url" "$T/git-$algo-$v"
		check_clone "$w: clone" "$S" "$T/pw-$algo-$v" "$T/git-$algo-$v"

		$G ls-remote --upload-pack="$UP" "$url" >"$T/ls-pw" 2>"$T/err" || not_ok "$w: ls-remote"
		$G ls-remote "$url" >"$T/ls-git"
		same_file "$w: ls-remote like stock git" "$T/ls-git" "$T/ls-pw"
		$G ls-remote --symref --upload-pack="$UP" "$url" HEAD >"$T/ls-pw"
		$G ls-remote --symref "$url" HEAD >"$T/ls-git"
		same_file "$w: ls-remote --symref HEAD" "$T/ls-git" "$T/ls-pw"

		# new history on the server, then an incremental fetch
		(cd "$S" && echo "more $v" >>a.txt && git commit -q -am "more $v" &&
			git checkout -q -b "side-$v" && echo side >"side-$v.txt" && git add . &&
			git commit -q -m "side $v" && git checkout -q main)
		git -C "$T/pw-$algo-$v" -c protocol.version=$v fetch -q --upload-pack="$UP" origin 2>"$T/err" ||
			{ not_ok "$w: fetch"; cat "$T/err"; }
		git -C "$T/git-$algo-$v" -c protocol.version=$v fetch -q origin
		check_clone "$w: incremental fetch" "$S" "$T/pw-$algo-$v" "$T/git-$algo-$v"

		# a new annotated tag, fetched by name
		git -C "$S" tag -a "rel-$v" -m "release $v" "side-$v"
		git -C "$T/pw-$algo-$v" -c protocol.version=$v fetch -q --upload-pack="$UP" origin \
			"refs/tags/rel-$v:refs/tags/rel-$v" 2>"$T/err" || { not_ok "$w: tag fetch"; cat "$T/err"; }
		if [ "$(git -C "$T/pw-$algo-$v" rev-parse "refs/tags/rel-$v")" = "$(git -C "$S" rev-parse "refs/tags/rel-$v")" ] &&
			[ "$(git -C "$T/pw-$algo-$v" cat-file -t "rel-$v")" = tag ] && fsck_ok "$T/pw-$algo-$v"; then
			ok "$w: tag fetch"
		else
			not_ok "$w: tag fetch"
		fi

		# shallow
		$G clone -q --depth=1 --no-single-branch --upload-pack="$UP" "$url" "$T/pwd-$algo-$v" 2>"$T/err" ||
			{ not_ok "$w: clone --depth=1"; cat "$T/err"; }
		$G clone -q --depth=1 --no-single-branch "$url" "$T/gitd-$algo-$v"
		check_clone "$w: clone --depth=1" "$S" "$T/pwd-$algo-$v" "$T/gitd-$algo-$v"
		check "$w: --depth=1 clone is shallow" test -s "$T/pwd-$algo-$v/.git/shallow"

		# partial clone
		$G clone -q --filter=blob:none --upload-pack="$UP" "$url" "$T/pwf-$algo-$v" 2>"$T/err" ||
			{ not_ok "$w: clone --filter=blob:none"; cat "$T/err"; }
		$G clone -q --filter=blob:none --no-checkout "$url" "$T/gitf-$algo-$v"
		git -C "$T/pwf-$algo-$v" cat-file --batch-all-objects --batch-check='%(objecttype)' |
			sort | uniq -c >"$T/types-pw"
		git -C "$T/gitf-$algo-$v" cat-file --batch-all-objects --batch-check='%(objecttype)' |
			sort | uniq -c >"$T/types-git"
		# the checkout fetched the blobs of HEAD lazily (with packwire too)
		check "$w: --filter=blob:none clone: refs and fsck" same_clone_refs "$S" "$T/pwf-$algo-$v"
		git -C "$T/pwf-$algo-$v" config remote.origin.promisor >/dev/null &&
			ok "$w: partial clone is a promisor remote" || not_ok "$w: partial clone is a promisor remote"
		nb_pw=$(git -C "$T/pwf-$algo-$v" rev-list --objects --all --missing=print | grep -c '^?' || true)
		nb_git=$(git -C "$T/gitf-$algo-$v" rev-list --objects --all --missing=print | grep -c '^?' || true)
		if [ "$nb_git" -gt 0 ] && [ "$nb_pw" -gt 0 ]; then
			ok "$w: --filter=blob:none left blobs out ($nb_pw missing, stock git $nb_git before checkout)"
		else
			not_ok "$w: --filter=blob:none left blobs out ($nb_pw vs $nb_git)"
		fi
	done
done

# real history, once per algorithm and protocol
if [ -n "${PW_SKIP_DATA:-}" ]; then
	skip "real-history clones: PW_SKIP_DATA set"
elif need_data; then
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
else
	skip "real-history clones: ../shared/data not available"
fi
finish
