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
	if fsck_ok "$c"; then ok "$what: fsck --strict"; else not_ok "$what: fsck --strict"; git -C "$c" fsck --strict 2>&1 | head -5; fi
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
