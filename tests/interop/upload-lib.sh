# Helpers for the upload-pack interop tests (sourced after lib.sh).

# A GIT_SSH_COMMAND that runs the remote command locally: it gets
# [-o SendEnv=GIT_PROTOCOL] [-p port] host "git-upload-pack '/path'" and runs
# that through sh with git-upload-pack swapped for packwire (GIT_PROTOCOL
# stays in the environment, as ssh's SendEnv would pass it).
make_fake_ssh() {
	cat >"$T/fake-ssh" <<EOF
#!/bin/sh
while [ \$# -gt 1 ]; do
	case \$1 in
	-o|-p|-i|-l) shift 2 ;;
	-*) shift ;;
	*) break ;;
	esac
done
host=\$1; shift
cmd=\$*
case \$cmd in
git-upload-pack*) cmd="\"$PACKWIRE\" upload-pack\${cmd#git-upload-pack}" ;;
*) echo "fake-ssh: unexpected command: \$cmd" >&2; exit 1 ;;
esac
echo "\$GIT_PROTOCOL" >>"$T/ssh-protocols"
exec sh -c "\$cmd"
EOF
	chmod +x "$T/fake-ssh"
	export GIT_SSH_COMMAND="$T/fake-ssh" GIT_SSH_VARIANT=ssh
}

UP="$PACKWIRE upload-pack"

# url_for TRANSPORT DIR
url_for() {
	case $1 in
	file) echo "file://$2" ;;
	ssh) echo "ssh://localhost$2" ;;
	esac
}

# server_refs DIR: heads and tags of a server as the clone names them
server_refs() {
	git ls-remote --heads --tags "$1" | grep -v '\^{}$' |
		sed 's#\trefs/heads/#\trefs/remotes/origin/#' | sort -k2
}
clone_refs() {
	git -C "$1" for-each-ref --format='%(objectname)%09%(refname)' refs/remotes/origin refs/tags |
		grep -v 'refs/remotes/origin/HEAD$' | sort -k2
}
# same_clone_refs SERVER CLONE
same_clone_refs() { diff <(server_refs "$1") <(clone_refs "$2") >/dev/null; }
# shallow_list DIR
shallow_list() { sort "$1/.git/shallow" 2>/dev/null || true; }

# check_clone WHAT SERVER CLONE REFERENCE-CLONE (made by stock git the same way)
check_clone() {
	local what=$1 server=$2 c=$3 ref=$4
	if fsck_ok "$c"; then ok "$what: fsck --strict"; else not_ok "$what: fsck --strict"; git -C "$c" fsck --strict 2>&1 | head -5 || true; fi
	check "$what: same refs as the server" same_clone_refs "$server" "$c"
	if [ "$(git -C "$c" rev-parse --show-object-format)" = "$(git -C "$server" rev-parse --show-object-format)" ]; then
		ok "$what: object format"
	else
		not_ok "$what: object format"
	fi
	if [ -n "$ref" ]; then
		if diff <(all_objects "$c") <(all_objects "$ref") >/dev/null; then
			ok "$what: same objects as stock git's clone"
		else
			not_ok "$what: same objects as stock git's clone ($(all_objects "$c" | wc -l) vs $(all_objects "$ref" | wc -l))"
		fi
		if diff <(shallow_list "$c") <(shallow_list "$ref") >/dev/null; then
			ok "$what: same shallow boundary as stock git"
		else
			not_ok "$what: same shallow boundary as stock git"
		fi
	fi
}

# pkt STRING: one pkt-line (ASCII); flush / delim markers
pkt() { printf '%04x%s' $((${#1} + 4)) "$1"; }
pkt_nl() { printf '%04x%s\n' $((${#1} + 5)) "$1"; }
flush() { printf '0000'; }
delim() { printf '0001'; }

# run_matrix TRANSPORT: the clone/fetch/ls-remote/depth/filter/tag cells for
# both algorithms and protocols 0, 1, 2 over file:// or ssh://.
run_matrix() {
	local -a PWOPT=(--upload-pack="$UP")
	[ "$1" = file ] || PWOPT=()
	local tr=$1 algo v w url gurl S G nb_pw nb_git
	for algo in sha1 sha256; do
		S=$T/src-$tr-$algo
		make_repo "$S" "$algo"
		git -C "$S" config uploadpack.allowFilter true
		# lazy fetches of blobs in v0/v1 ask for unadvertised objects
		git -C "$S" config uploadpack.allowAnySHA1InWant true
		for v in 0 1 2; do
			w="$algo v$v $tr"
			url=$(url_for "$tr" "$S") gurl=$(url_for file "$S")
			G="git -c protocol.version=$v"
			$G clone -q "${PWOPT[@]}" "$url" "$T/pw-$tr-$algo-$v" 2>"$T/err" ||
				{ not_ok "$w: clone"; cat "$T/err"; continue; }
			$G clone -q "$gurl" "$T/git-$tr-$algo-$v"
			check_clone "$w: clone" "$S" "$T/pw-$tr-$algo-$v" "$T/git-$tr-$algo-$v"

			$G ls-remote "${PWOPT[@]}" "$url" >"$T/ls-pw" 2>"$T/err" || not_ok "$w: ls-remote"
			$G ls-remote "$gurl" >"$T/ls-git"
			same_file "$w: ls-remote like stock git" "$T/ls-git" "$T/ls-pw"
			$G ls-remote --symref "${PWOPT[@]}" "$url" HEAD >"$T/ls-pw"
			$G ls-remote --symref "$gurl" HEAD >"$T/ls-git"
			same_file "$w: ls-remote --symref HEAD" "$T/ls-git" "$T/ls-pw"

			# new history on the server, then an incremental fetch
			(cd "$S" && echo "more $v" >>a.txt && git commit -q -am "more $v" &&
				git checkout -q -b "side-$v" && echo side >"side-$v.txt" && git add . &&
				git commit -q -m "side $v" && git checkout -q main)
			git -C "$T/pw-$tr-$algo-$v" -c protocol.version=$v fetch -q "${PWOPT[@]}" origin 2>"$T/err" ||
				{ not_ok "$w: fetch"; cat "$T/err"; }
			git -C "$T/git-$tr-$algo-$v" -c protocol.version=$v fetch -q origin
			check_clone "$w: incremental fetch" "$S" "$T/pw-$tr-$algo-$v" "$T/git-$tr-$algo-$v"

			# a new annotated tag, fetched by name
			git -C "$S" tag -a "rel-$v" -m "release $v" "side-$v"
			git -C "$T/pw-$tr-$algo-$v" -c protocol.version=$v fetch -q "${PWOPT[@]}" origin \
				"refs/tags/rel-$v:refs/tags/rel-$v" 2>"$T/err" || { not_ok "$w: tag fetch"; cat "$T/err"; }
			if [ "$(git -C "$T/pw-$tr-$algo-$v" rev-parse "refs/tags/rel-$v")" = "$(git -C "$S" rev-parse "refs/tags/rel-$v")" ] &&
				[ "$(git -C "$T/pw-$tr-$algo-$v" cat-file -t "rel-$v")" = tag ] && fsck_ok "$T/pw-$tr-$algo-$v"; then
				ok "$w: tag fetch"
			else
				not_ok "$w: tag fetch"
			fi

			# shallow
			$G clone -q --depth=1 --no-single-branch "${PWOPT[@]}" "$url" "$T/pwd-$tr-$algo-$v" 2>"$T/err" ||
				{ not_ok "$w: clone --depth=1"; cat "$T/err"; }
			$G clone -q --depth=1 --no-single-branch "$gurl" "$T/gitd-$tr-$algo-$v"
			check_clone "$w: clone --depth=1" "$S" "$T/pwd-$tr-$algo-$v" "$T/gitd-$tr-$algo-$v"
			check "$w: --depth=1 clone is shallow" test -s "$T/pwd-$tr-$algo-$v/.git/shallow"

			# partial clone
			$G clone -q --filter=blob:none "${PWOPT[@]}" "$url" "$T/pwf-$tr-$algo-$v" 2>"$T/err" ||
				{ not_ok "$w: clone --filter=blob:none"; cat "$T/err"; }
			$G clone -q --filter=blob:none --no-checkout "$gurl" "$T/gitf-$tr-$algo-$v"
			git -C "$T/pwf-$tr-$algo-$v" cat-file --batch-all-objects --batch-check='%(objecttype)' |
				sort | uniq -c >"$T/types-pw"
			git -C "$T/gitf-$tr-$algo-$v" cat-file --batch-all-objects --batch-check='%(objecttype)' |
				sort | uniq -c >"$T/types-git"
			# the checkout fetched the blobs of HEAD lazily (with packwire too)
			check "$w: --filter=blob:none clone: refs" same_clone_refs "$S" "$T/pwf-$tr-$algo-$v"
			check "$w: --filter=blob:none clone: fsck --strict" fsck_ok "$T/pwf-$tr-$algo-$v"
			git -C "$T/pwf-$tr-$algo-$v" config remote.origin.promisor >/dev/null &&
				ok "$w: partial clone is a promisor remote" || not_ok "$w: partial clone is a promisor remote"
			nb_pw=$(git -C "$T/pwf-$tr-$algo-$v" rev-list --objects --all --missing=print | grep -c '^?' || true)
			nb_git=$(git -C "$T/gitf-$tr-$algo-$v" rev-list --objects --all --missing=print | grep -c '^?' || true)
			if [ "$nb_git" -gt 0 ] && [ "$nb_pw" -gt 0 ]; then
				ok "$w: --filter=blob:none left blobs out ($nb_pw missing, stock git $nb_git before checkout)"
			else
				not_ok "$w: --filter=blob:none left blobs out ($nb_pw vs $nb_git)"
			fi
		done
	done
}
