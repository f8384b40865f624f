#!/bin/bash
# Partial-clone filters served by packwire upload-pack (issue 11, Git's
# t5616), against stock git, protocols v0 and v2, SHA-1 and SHA-256:
# combine: filters (as git clone builds them from repeated --filter),
# sparse:oid=<rev>:<path>, and the repository's uploadpackfilter.allow,
# uploadpackfilter.<filter>.allow and uploadpackfilter.tree.maxDepth rules
# (refused with Git's messages).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

# clone_both WHAT ARGS...: the same partial clone from packwire and git
clone_both() {
	local what=$1
	shift
	rm -rf "$T/pw" "$T/git"
	git "${GC[@]}" clone -q --bare --upload-pack="$UP" "$@" "$T/pw" 2>"$T/err" || { not_ok "$what: clone"; cat "$T/err"; return 0; }
	git "${GC[@]}" clone -q --bare "$@" "$T/git"
	if diff <(all_objects "$T/pw") <(all_objects "$T/git") >/dev/null; then ok "$what: same objects as git's"
	else not_ok "$what: same objects as git's ($(all_objects "$T/pw" | wc -l) vs $(all_objects "$T/git" | wc -l))"; fi
}

# refused WHAT MESSAGE ARGS...: packwire refuses the clone with Git's message
refused() {
	local what=$1 msg=$2
	shift 2
	rm -rf "$T/pw"
	if git "${GC[@]}" clone -q --bare --upload-pack="$UP" "$@" "$T/pw" 2>"$T/err"; then
		not_ok "$what: refused (clone succeeded)"
	else
		contains "$what: refused with Git's message" "$T/err" "$msg"
	fi
}

for algo in sha1 sha256; do
	S=$T/src-$algo
	make_repo "$S" "$algo" 2>/dev/null
	(cd "$S" && printf 'a.txt\nsub/\n' >only && git add only && git commit -q -m "sparse patterns")
	git -C "$S" config uploadpack.allowFilter true
	git -C "$S" config uploadpack.allowAnySHA1InWant true
	url=file://$S
	for v in 0 2; do
		w="$algo v$v"
		GC=(-c protocol.version=$v)
		clone_both "$w: --filter=blob:none --filter=tree:1 (combine:)" --filter=blob:none --filter=tree:1 "$url"
		clone_both "$w: --filter=combine:blob:limit=100+tree:3" --filter=combine:blob:limit=100+tree:3 "$url"
		clone_both "$w: --filter=sparse:oid=main:only" --filter=sparse:oid=main:only "$url"
		# (rev-list, not cat-file, which would fetch a missing blob)
		git -C "$T/pw" rev-list --objects --missing=print HEAD >"$T/listed" 2>/dev/null || true
		contains "$w: sparse:oid sent the matching blob" "$T/listed" "$(git -C "$S" rev-parse HEAD:a.txt)"
		contains "$w: sparse:oid left out the others" "$T/listed" "?$(git -C "$S" rev-parse HEAD:big.txt)"
		refused "$w: unresolvable sparse:oid" "unable to access sparse blob in 'main:no-such-name'" \
			--filter=sparse:oid=main:no-such-name "$url"
		refused "$w: sparse:oid naming a commit" "unable to parse sparse filter data in" \
			--filter=sparse:oid=main "$url"

		git -C "$S" config uploadpackfilter.blob:none.allow false
		refused "$w: uploadpackfilter.blob:none.allow=false" "filter 'blob:none' not supported" --filter=blob:none "$url"
		git -C "$S" config uploadpackfilter.allow false
		git -C "$S" config uploadpackfilter.combine.allow true
		git -C "$S" config uploadpackfilter.tree.allow true
		refused "$w: a banned filter inside combine:" "filter 'blob:none' not supported" \
			--filter=tree:1 --filter=blob:none "$url"
		git -C "$S" config --remove-section uploadpackfilter.blob:none
		git -C "$S" config --remove-section uploadpackfilter.combine
		git -C "$S" config --remove-section uploadpackfilter.tree
		refused "$w: uploadpackfilter.allow=false (fallback)" "filter 'blob:none' not supported" --filter=blob:none "$url"
		git -C "$S" config uploadpackfilter.tree.maxDepth 0
		refused "$w: uploadpackfilter.tree.maxDepth=0" "tree filter allows max depth 0, but got 1" --filter=tree:1 "$url"
		clone_both "$w: tree:0 within maxDepth" --filter=tree:0 "$url"
		git -C "$S" config --remove-section uploadpackfilter.tree
		git -C "$S" config --remove-section uploadpackfilter
	done
done
finish
