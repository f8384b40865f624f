#!/usr/bin/env bash
# Smart HTTP through a real web server: stock git clones, fetches, lists and
# pushes through Apache httpd + `packwire http-backend` (CGI), and the same
# through Apache + `git http-backend`, for SHA-1 and SHA-256, protocol v0
# and v2. Push is behind basic auth: refused without it (401), refused by the
# backend where no user is authenticated (403), accepted with user:pass.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-lib.sh"

if ! need_httpd; then
	skip "apache2 (apache2-bin), curl or openssl missing: scripts/install-deps.sh installs them"
	finish
fi

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	for be in pw git; do
		git clone -q --bare "src-$algo" "srv/$algo-$be.git"
	done
done
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT

# run_to FILE COMMAND...: the command's output (both streams) into FILE
run_to() {
	local out=$1
	shift
	"$@" >"$out" 2>&1
}
# norm FILE: the backend's name and the port out of a message
norm() { sed -e "s#/\(pw\|git\)\(-open\)\?/#/BE\2/#g" -e "s#-\(pw\|git\)\.git#-BE.git#g" \
	-e "s#:$HTTPD_PORT#:PORT#g" "$1"; }

for algo in sha1 sha256; do
	for v in 0 2; do
		for be in pw git; do
			r=$algo-$be.git
			c=clone-$algo-$be-v$v
			git -c protocol.version=$v clone -q --bare "$U/$be/$r" "$c" 2>"$c.err" ||
				{ not_ok "$be $algo v$v: clone"; cat "$c.err"; continue; }
			check "$be $algo v$v: clone is fsck --strict clean" fsck_ok "$c"
			check "$be $algo v$v: clone has the server's refs" same_refs "$c" "srv/$r"
			check "$be $algo v$v: clone's object format is $algo" \
				test "$(git -C "$c" rev-parse --show-object-format)" = "$algo"
			git -c protocol.version=$v ls-remote "$U/$be/$r" >"ls-$c" 2>&1
			git ls-remote "srv/$r" >"ls-$c.expect"
			same_file "$be $algo v$v: ls-remote lists the refs" "ls-$c.expect" "ls-$c"
		done
		same_file "$algo v$v: pw and git clones have the same refs" \
			<(refs "clone-$algo-pw-v$v") <(refs "clone-$algo-git-v$v")

		# push: a new commit on a new branch, from a work tree
		for be in pw git; do
			r=$algo-$be.git
			w=work-$algo-$be-v$v
			git clone -q "srv/$r" "$w"
			git -C "$w" commit -q --allow-empty -m "pushed over http v$v"
			check_fails "$be $algo v$v: push without a user refused" run_to "$w.open.out" \
				git -C "$w" -c protocol.version=$v push "$U/$be-open/$r" HEAD:refs/heads/open-v$v
			check_fails "$be $algo v$v: push without auth refused" run_to "$w.noauth.out" \
				git -C "$w" -c protocol.version=$v push "$U/$be/$r" HEAD:refs/heads/noauth-v$v
			before=$(refs "srv/$r")
			check "$be $algo v$v: nothing written by refused pushes" test "$before" = "$(refs "srv/$r")"
			check "$be $algo v$v: push with user:pass" git -C "$w" -c protocol.version=$v push -q \
				"http://alice:secret@127.0.0.1:$HTTPD_PORT/$be/$r" HEAD:refs/heads/pushed-v$v
			check "$be $algo v$v: pushed ref on the server" \
				test "$(git -C "srv/$r" rev-parse refs/heads/pushed-v$v)" = "$(git -C "$w" rev-parse HEAD)"
			check "$be $algo v$v: server fsck --strict clean after the push" fsck_ok "srv/$r"
			# fetch what was pushed into the earlier clone
			c=clone-$algo-$be-v$v
			check "$be $algo v$v: fetch" git -C "$c" -c protocol.version=$v fetch -q "$U/$be/$r" \
				"+refs/heads/*:refs/heads/*"
			check "$be $algo v$v: fetched clone fsck --strict clean" fsck_ok "$c"
			check "$be $algo v$v: fetched refs match the server" same_refs "$c" "srv/$r"
		done
		for f in open.out noauth.out; do
			same_file "$algo v$v: push messages ($f) as with git http-backend" \
				<(norm "work-$algo-git-v$v.$f") <(norm "work-$algo-pw-v$v.$f")
		done
		contains "$algo v$v: 403 for a push without a user" "work-$algo-pw-v$v.open.out" "403"
		contains "$algo v$v: 401 asks for credentials" "work-$algo-pw-v$v.noauth.out" \
			"could not read Username"
	done
done
stop_httpd
finish
