# Helpers for the t-client-*.sh tests (sourced after lib.sh).

# A stand-in for ssh that runs the remote command locally. It is called
# "ssh" so that git and packwire both treat it as OpenSSH (-o SendEnv=...,
# -p PORT) and speak protocol v2 through it; GIT_PROTOCOL reaches the
# command through the environment.
mkdir -p "$T/bin"
FAKE_SSH=$T/bin/ssh
cat >"$FAKE_SSH" <<'EOS'
#!/bin/sh
echo "$*" >>"${FAKE_SSH_LOG:-/dev/null}"
while [ $# -gt 2 ]; do
	case $1 in
	-o | -p | -P) shift 2 ;;
	*) shift ;;
	esac
done
exec sh -c "$2"
EOS
chmod +x "$FAKE_SSH"
export GIT_SSH_COMMAND=$FAKE_SSH

# url TRANSPORT PATH: the address of a repository over file:// or ssh
url() {
	case $1 in
	file) echo "file://$2" ;;
	ssh) echo "ssh://localhost$2" ;;
	path) echo "$2" ;;
	esac
}

# pw VERSION ARGS...: packwire with protocol.version set
pw() { local v=$1; shift; "$PACKWIRE" -c protocol.version="$v" "$@"; }
g() { local v=$1; shift; git -c protocol.version="$v" "$@"; }

# A listing of everything that can change in a repository: refs, object
# ids, pack files, shallow, FETCH_HEAD absent or present.
state() {
	local d=$1 gd
	gd=$(git -C "$d" rev-parse --absolute-git-dir)
	refs "$d"
	all_objects "$d"
	(cd "$gd" && find objects refs -type f | sort && cat packed-refs shallow 2>/dev/null || true)
}
