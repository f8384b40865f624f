# Helpers for the t-client-*.sh tests (sourced after lib.sh).

# ssh runs the remote command locally (lib.sh: use_fake_ssh)
use_fake_ssh

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
