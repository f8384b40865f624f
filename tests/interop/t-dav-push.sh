#!/usr/bin/env bash
# Push over WebDAV (what git http-push does): stock git with packwire as its
# git-remote-http pushes to repositories that Apache serves as plain files
# with mod_dav (no smart receive-pack), SHA-1 and SHA-256: a new branch, a
# fast-forward, a non-fast-forward refused (the server unchanged), a forced
# update, a deletion (also of a packed ref), tags (peeled in info/refs), a
# branch in a subdirectory, a push of enough objects to go as a pack; after
# each the server repository is fsck --strict clean and has the pusher's
# refs and objects, and a dumb clone of it (stock git) matches; packwire's
# own push command takes the same path, and basic auth asks once. A lock
# held by another client and the other algorithm's repository stop a push
# before any write. Hostile
# servers: no DAV at all, no locking, garbage XML, a refused lock: a clear
# error, and the server's files unchanged.
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
. "$(dirname "$0")/http-lib.sh"

if ! need_httpd || [ ! -f "$HTTPD_MODULES/mod_dav_fs.so" ]; then
	skip "apache2 (apache2-bin) with mod_dav_fs, curl or openssl missing: scripts/install-deps.sh installs them"
	finish
fi

# git's exec path, with packwire in place of git-remote-http(s)
EXEC=$T/exec
mkdir -p "$EXEC"
for f in "$(git --exec-path)"/*; do ln -s "$f" "$EXEC/"; done
for n in git-remote-http git-remote-https; do
	rm -f "$EXEC/$n"
	printf '#!/bin/sh\nexec "%s" remote-http "$@"\n' "$PACKWIRE" >"$EXEC/$n"
	chmod +x "$EXEC/$n"
done
pgit() { GIT_EXEC_PATH=$EXEC git "$@"; }

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git init -q --bare --object-format="$algo" "srv/$algo.git"
	git -C "srv/$algo.git" update-server-info
	git init -q --bare --object-format="$algo" "srv/$algo-hostile.git"
	git -C "src-$algo" push -q "$T/srv/$algo-hostile.git" main
	git -C "srv/$algo-hostile.git" update-server-info
done

# hostile: a python server speaking just enough DAV to be taken for one
HOSTILE_PORT=$(free_port)
cat >hostile.py <<'PY'
import http.server, sys, os
root = sys.argv[2]
class H(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, *a):
        pass
    def mode(self):
        return self.path.split('/')[1]
    def reply(self, code, body=b'', hdrs=()):
        self.send_response(code)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def body(self):
        n = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(n)
    def do_PROPFIND(self):
        self.body()
        m = self.mode()
        if m == 'garbage':
            self.reply(207, b'<?xml version="1.0"?><D:multistatus xmlns:D="DAV:"><D:response><D:href>/x</D:hre')
        elif m == 'nolock':
            self.reply(207, b'<?xml version="1.0"?><D:multistatus xmlns:D="DAV:"><D:response><D:href>/nolock/</D:href><D:propstat><D:prop><D:supportedlock/></D:prop></D:propstat></D:response></D:multistatus>')
        elif m == 'nodav':
            self.reply(405)
        else:
            ok = b'<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>'
            self.reply(207, b'<?xml version="1.0"?><D:multistatus xmlns:D="DAV:"><D:response><D:href>/' + m.encode() + b'/</D:href><D:propstat><D:prop><D:supportedlock>' + ok + b'</D:supportedlock></D:prop></D:propstat></D:response></D:multistatus>')
    def do_LOCK(self):
        self.body()
        if self.mode() == 'badlock':
            self.reply(200, b'<D:prop xmlns:D="DAV:"><D:lockdiscovery><D:activelock><D:locktoken><D:href>&bogus;</D:href>')
        else:
            self.reply(423, b'locked')
    def do_PUT(self):
        open(os.path.join(root, 'WRITTEN'), 'w').close()
        self.reply(403)
    do_MKCOL = do_MOVE = do_DELETE = do_PUT
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
PY

HTTPD_EXTRA_CONF="LoadModule dav_module $HTTPD_MODULES/mod_dav.so
LoadModule dav_fs_module $HTTPD_MODULES/mod_dav_fs.so
DAVLockDB \"$T/httpd/DAVLock\"
Alias /dav/ \"$T/srv/\"
<Directory \"$T/srv\">
	Require all granted
</Directory>
<Location /dav/>
	Dav on
</Location>
Alias /dav-auth/ \"$T/srv/\"
<Location /dav-auth/>
	Dav on
	AuthType Basic
	AuthName \"git\"
	AuthUserFile \"$T/httpd/htpasswd\"
	Require valid-user
</Location>"
start_httpd "$T/srv"
own_httpd_root
U=http://127.0.0.1:$HTTPD_PORT/dav

# the server matches the pusher: fsck, refs (those pushed), objects
server_ok() { # what algo ref...
	local what=$1 algo=$2 r
	shift 2
	own_httpd_root
	check "$algo: $what: server fsck --strict clean" fsck_ok "srv/$algo.git"
	for r in "$@"; do
		check "$algo: $what: server has $r" test "$(git -C "srv/$algo.git" rev-parse -q --verify "$r")" = \
			"$(git -C "work-$algo" rev-parse "$r" 2>/dev/null || git -C "work-$algo" rev-parse "refs/remotes/origin/${r#refs/heads/}")"
	done
	# every object the pushed refs reach is on the server
	git -C "work-$algo" rev-list --objects "$@" | cut -d' ' -f1 | sort -u >"want.$algo"
	git -C "srv/$algo.git" cat-file --batch-check='%(objectname)' <"want.$algo" | grep -v missing | sort -u >"have.$algo" || true
	same_file "$algo: $what: server has every object pushed" "want.$algo" "have.$algo"
	# info/refs is what update-server-info would write
	cp "srv/$algo.git/info/refs" "info.$algo"
	git -C "srv/$algo.git" update-server-info
	same_file "$algo: $what: info/refs is up to date" "info.$algo" "srv/$algo.git/info/refs"
}

for algo in sha1 sha256; do
	# (stock git's dumb clone of an empty repository is always sha1)
	w=work-$algo
	git init -q --object-format="$algo" "$w"
	git -C "$w" remote add origin "$U/$algo.git"
	git -C "$w" fetch -q --update-head-ok "$T/src-$algo" 'refs/heads/*:refs/heads/*' 'refs/tags/*:refs/tags/*'
	git -C "$w" checkout -q main

	check "$algo: push of a new branch to an empty repository" pgit -C "$w" push -q origin main
	server_ok "new branch" "$algo" refs/heads/main

	git -C "$w" commit -q --allow-empty -m ff
	check "$algo: fast-forward push" pgit -C "$w" push -q origin main
	server_ok "fast-forward" "$algo" refs/heads/main

	check "$algo: push of the same again is up to date" pgit -C "$w" push origin main
	check "$algo: push of tags" pgit -C "$w" push -q origin --tags
	server_ok "tags" "$algo" refs/tags/v0.1 refs/tags/v0.2 refs/tags/v0.2-annotated
	contains "$algo: info/refs peels the annotated tag" "srv/$algo.git/info/refs" \
		"$(git -C "$w" rev-parse 'v0.1^{}')	refs/tags/v0.1^{}"

	# non-fast-forward: refused, the server unchanged
	before=$(refs "srv/$algo.git")
	git -C "$w" reset -q --hard HEAD~1
	git -C "$w" commit -q --allow-empty -m diverged
	pgit -C "$w" push origin main >nonff.out 2>&1 && not_ok "$algo: non-fast-forward accepted" ||
		ok "$algo: non-fast-forward refused"
	contains "$algo: non-fast-forward status as git spells it" nonff.out "! [rejected]        main -> main (non-fast-forward)"
	check "$algo: refused push leaves the server's refs" test "$(refs "srv/$algo.git")" = "$before"

	check "$algo: forced push" pgit -C "$w" push -q -f origin main
	server_ok "forced" "$algo" refs/heads/main

	# a revision as the source: git hands it to the helper as written
	check "$algo: push of HEAD~1 to a new ref" pgit -C "$w" push -q origin HEAD~1:refs/heads/rev-expr
	check "$algo: the new ref is HEAD~1" \
		test "$(git -C "srv/$algo.git" rev-parse rev-expr)" = "$(git -C "$w" rev-parse HEAD~1)"
	check "$algo: delete it" pgit -C "$w" push -q origin :rev-expr

	# a ref locked by someone else: the push stops, nothing changes (the
	# new branch locked before it leaves no file behind), then goes through
	lockinfo='<?xml version="1.0" encoding="utf-8" ?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner><D:href>other</D:href></D:owner></D:lockinfo>'
	tok=$(curl -s -D - -o /dev/null -X LOCK -H 'Timeout: Second-600' -H 'Content-Type: text/xml' \
		--data "$lockinfo" "$U/$algo.git/refs/heads/main" | tr -d '\r' | sed -n 's/^[Ll]ock-[Tt]oken: //p')
	check "$algo: another client holds a lock on main" test -n "$tok"
	before=$(refs "srv/$algo.git")
	files() { (cd "srv/$algo.git" && find . -type f -not -path '*/.DAV/*' | sort); }
	files_before=$(files)
	git -C "$w" commit -q --allow-empty -m "while locked"
	pgit -C "$w" push origin main main:refs/heads/brand-new >locked.out 2>&1 &&
		not_ok "$algo: push to a locked ref succeeded" || ok "$algo: push to a locked ref fails"
	contains "$algo: locked ref: the error says so" locked.out "cannot lock"
	check "$algo: locked ref: the server's refs unchanged" test "$(refs "srv/$algo.git")" = "$before"
	check "$algo: locked ref: no file left for the new branch" test ! -e "srv/$algo.git/refs/heads/brand-new"
	check "$algo: locked ref: no file added or removed on the server" test "$(files)" = "$files_before"
	curl -s -o /dev/null -X UNLOCK -H "Lock-Token: $tok" "$U/$algo.git/refs/heads/main"
	check "$algo: push once the lock is gone" pgit -C "$w" push -q origin main main:refs/heads/brand-new
	server_ok "after the lock" "$algo" refs/heads/main
	check "$algo: the new branch is there after the lock" \
		test "$(git -C "srv/$algo.git" rev-parse brand-new)" = "$(git -C "$w" rev-parse main)"
	check "$algo: delete the new branch" pgit -C "$w" push -q origin :brand-new

	# a branch in a subdirectory, then its deletion
	git -C "$w" branch feature/deep/x HEAD~2
	check "$algo: push of a branch in a subdirectory" pgit -C "$w" push -q origin feature/deep/x
	server_ok "subdirectory branch" "$algo" refs/heads/feature/deep/x
	check "$algo: delete a branch" pgit -C "$w" push -q origin :feature/deep/x
	check "$algo: deleted branch is gone from the server" \
		test -z "$(git -C "srv/$algo.git" for-each-ref refs/heads/feature)"
	check "$algo: deleted branch is gone from info/refs" sh -c "! grep -q feature 'srv/$algo.git/info/refs'"
	check "$algo: the pusher's tracking ref is gone" test -z "$(git -C "$w" for-each-ref refs/remotes/origin/feature)"

	# deleting a packed ref rewrites packed-refs
	pgit -C "$w" push -q origin HEAD:refs/heads/packme
	own_httpd_root
	git -C "srv/$algo.git" pack-refs --all
	own_httpd_root
	check "$algo: delete a packed ref" pgit -C "$w" push -q origin :packme
	check "$algo: the packed ref is gone" test -z "$(git -C "srv/$algo.git" for-each-ref refs/heads/packme)"
	server_ok "after packed delete" "$algo" refs/heads/main

	# packwire's own push command takes the same path
	git -C "$w" commit -q --allow-empty -m "by packwire push"
	check "$algo: packwire push to the DAV repository" "$PACKWIRE" -C "$w" push -q origin main
	server_ok "packwire push" "$algo" refs/heads/main
	check "$algo: packwire push updated the tracking ref" \
		test "$(git -C "$w" rev-parse origin/main)" = "$(git -C "$w" rev-parse main)"

	# many objects: one pack, listed in objects/info/packs
	for i in $(seq 1 200); do echo "$i $algo" >"$w/f$i.txt"; done
	git -C "$w" add -A && git -C "$w" commit -q -m many
	for i in $(seq 1 200); do echo "$i $algo again" >"$w/f$i.txt"; done
	git -C "$w" commit -q -am "many again"
	check "$algo: push of a few hundred objects" pgit -C "$w" push --progress origin main 2>pack.err
	contains "$algo: the pack's progress is shown" pack.err "Writing objects"
	server_ok "pack" "$algo" refs/heads/main
	check "$algo: the objects came as a pack named in objects/info/packs" \
		grep -q '^P pack-.*\.pack$' "srv/$algo.git/objects/info/packs"
	git clone -q "$U/$algo.git" "reclone-$algo" 2>/dev/null
	check "$algo: stock git clones the pushed repository over dumb HTTP" \
		test "$(git -C "reclone-$algo" rev-parse HEAD)" = "$(git -C "$w" rev-parse HEAD)"
	check "$algo: the dumb clone is fsck --strict clean" fsck_ok "reclone-$algo"
done

# basic auth on every DAV request: the password asked once (askpass)
cat >askpass <<ASKPASS
#!/bin/sh
echo "\$1" >>"$T/askpass.log"
echo secret
ASKPASS
chmod +x askpass
for algo in sha1 sha256; do
	w=work-$algo
	git -C "$w" commit -q --allow-empty -m "with auth"
	: >askpass.log
	check "$algo: push with basic auth (user in the URL)" env GIT_ASKPASS="$T/askpass" \
		GIT_EXEC_PATH="$EXEC" git -C "$w" push -q "http://alice@127.0.0.1:$HTTPD_PORT/dav-auth/$algo.git" main
	check "$algo: auth: the server has the commit" \
		test "$(git -C "srv/$algo.git" rev-parse main)" = "$(git -C "$w" rev-parse main)"
	check "$algo: auth: the password was asked once" test "$(wc -l <askpass.log)" -eq 1
	own_httpd_root
	check "$algo: auth: server fsck --strict clean" fsck_ok "srv/$algo.git"
done

# the other algorithm's repository: refused before anything is written
for pair in "sha1 sha256" "sha256 sha1"; do
	# shellcheck disable=SC2086
	set -- $pair
	before=$(refs "srv/$2.git")
	pgit -C "work-$1" push "$U/$2.git" main:refs/heads/from-$1 >algo.out 2>&1 &&
		not_ok "$1 push to a $2 DAV repository succeeded" || ok "$1 push to a $2 DAV repository fails"
	contains "$1 push to $2: the error names the hash algorithm" algo.out "hash algorithm"
	check "$1 push to $2: the server's refs unchanged" test "$(refs "srv/$2.git")" = "$before"
done

# hostile servers
python3 hostile.py "$HOSTILE_PORT" "$T/srv" &
HPID=$!
trap 'kill $HPID 2>/dev/null || true; http_cleanup' EXIT
for _ in $(seq 1 50); do curl -s -o /dev/null "http://127.0.0.1:$HOSTILE_PORT/" && break; sleep 0.1; done
H=http://127.0.0.1:$HOSTILE_PORT
for algo in sha1 sha256; do
	w=work-$algo
	for mode in nodav nolock garbage locked badlock; do
		rm -rf "srv/$mode"
		mkdir -p "srv/$mode"
		cp -R "srv/$algo-hostile.git/." "srv/$mode/"
		rm -f "srv/$mode/WRITTEN"
		pgit -C "$w" push "$H/$mode" main:refs/heads/new >"h-$mode.out" 2>&1 &&
			not_ok "$algo: push to a '$mode' server succeeded" || ok "$algo: push to a '$mode' server fails"
		check "$algo: '$mode' server: nothing written" test ! -e "srv/$mode/WRITTEN"
	done
	contains "$algo: no DAV: the error says so" h-nodav.out "no smart receive-pack and no WebDAV"
	contains "$algo: no locking: the error says so" h-nolock.out "no DAV locking support"
	contains "$algo: garbage XML: the error says so" h-garbage.out "malformed XML"
	contains "$algo: refused lock: the error says so" h-locked.out "cannot lock"
	contains "$algo: bad lock answer: the error says so" h-badlock.out "unknown entity"
	check "$algo: no tracking ref after failed pushes" \
		test -z "$(git -C "$w" for-each-ref refs/remotes/origin/new)"
done
kill $HPID 2>/dev/null || true
wait $HPID 2>/dev/null || true

finish
