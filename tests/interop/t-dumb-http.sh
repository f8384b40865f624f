#!/usr/bin/env bash
# Dumb HTTP, both algorithms: packwire's ls-remote, clone and fetch against
# plain static web servers (Apache serving the repositories as files, and a
# python3 http.server) after `git update-server-info`: a packed repository,
# a loose-only one, a mixed one (pack + loose), alternates (relative
# objects/info/alternates and absolute http-alternates; followed only with
# http.followRedirects=true, as Git), a detached HEAD, an empty repository,
# and an incremental fetch. Results are checked with fsck --strict, refs,
# objects and object format; ls-remote against the server's own listing;
# basic auth; Git's t5550 corrupt-idx and pack-per-branch cases.
# Server side: `packwire update-server-info` writes the same bytes as Git's,
# stock git clones over dumb HTTP from them, and a push into packwire
# receive-pack with receive.updateServerInfo=true updates them.
. "$(dirname "$0")/lib.sh"
unset GIT_SSL_CAINFO GIT_SSL_NO_VERIFY http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY
. "$(dirname "$0")/http-lib.sh"

if ! need_httpd; then
	skip "apache2 (apache2-bin), curl or openssl missing: scripts/install-deps.sh installs them"
	finish
fi
pw() { "$PACKWIRE" "$@"; }

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	s=srv/$algo
	git clone -q --bare "src-$algo" "$s-mixed.git" # make_repo's pack + loose objects
	git clone -q --bare "src-$algo" "$s-packed.git"
	git -C "$s-packed.git" repack -q -a -d
	git clone -q --bare "src-$algo" "$s-loose.git"
	for p in "$s-loose.git"/objects/pack/*.pack; do
		mv "$p" loose.pack
		rm -f "${p%.pack}.idx"
		git -C "$s-loose.git" unpack-objects -q <loose.pack
		rm loose.pack
	done
	# alternates: a repository holding only what it adds to -packed.git
	for kind in alt http-alt; do
		git init -q --bare --object-format="$algo" "$s-$kind.git"
		echo "../../$algo-packed.git/objects" >"$s-$kind.git/objects/info/alternates"
		git -C "$s-$kind.git" fetch -q ../"$algo-packed.git" 'refs/*:refs/*'
	done
	git -C "src-$algo" commit -q --allow-empty -m "only in the alternate users"
	for kind in alt http-alt; do
		git -C "src-$algo" push -q "../$s-$kind.git" main
	done
	git clone -q --bare "src-$algo" "$s-detached.git"
	git -C "$s-detached.git" update-ref --no-deref HEAD "$(git -C "src-$algo" rev-parse HEAD~2)"
	git init -q --bare --object-format="$algo" "$s-empty.git"
	for r in "$s"-*.git; do git -C "$r" update-server-info; done
	# http-alternates names the other store by an absolute URL (set below)
	rm "$s-http-alt.git/objects/info/alternates"
	# update-server-info by packwire (no info files from git)
	git clone -q --bare "src-$algo" "$s-pwinfo.git"
	git clone -q --bare "src-$algo" "$s-push.git"
	git -C "$s-push.git" config receive.updateServerInfo true
done

HTTPD_EXTRA_CONF="Alias /dumb/ \"$T/srv/\"
<Directory \"$T/srv\">
	Require all granted
</Directory>
Alias /dumb-auth/ \"$T/srv/\"
<Location /dumb-auth/>
	AuthType Basic
	AuthName \"git\"
	AuthUserFile \"$T/httpd/htpasswd\"
	Require valid-user
</Location>"
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT/dumb
for algo in sha1 sha256; do
	echo "$U/$algo-packed.git/objects" >"srv/$algo-http-alt.git/objects/info/http-alternates"
done
own_httpd_root

# clone_ok NAME URL SERVER-REPO ALGO [packwire options]: a bare clone that
# matches the server
clone_ok() {
	local t=$1 url=$2 srv=$3 algo=$4 c=clone-$1
	shift 4
	if pw "$@" clone -q --bare "$url" "$c" 2>"$c.err"; then
		check "$t: clone is fsck --strict clean" fsck_ok "$c"
		check "$t: clone has the server's refs" same_refs "$c" "$srv"
		check "$t: clone's object format is $algo" \
			test "$(git -C "$c" rev-parse --show-object-format)" = "$algo"
		check "$t: no quarantine left behind" test -z "$(ls -d "$c"/objects/incoming-* 2>/dev/null)"
	else
		not_ok "$t: clone"
		cat "$c.err"
	fi
}

for algo in sha1 sha256; do
	for kind in packed loose mixed detached; do
		r=$algo-$kind.git
		t="$algo $kind"
		pw ls-remote "$U/$r" >"ls-$t" 2>"ls-$t.err" || { not_ok "$t: ls-remote"; cat "ls-$t.err"; }
		# (git's own dumb client leaves out a detached SHA-256 HEAD: it
		# reads it as SHA-1; its local listing is the reference)
		git ls-remote "srv/$r" >"ls-$t.expect"
		same_file "$t: ls-remote lists the server's refs, HEAD first" "ls-$t.expect" "ls-$t"
		clone_ok "$t" "$U/$r" "srv/$r" "$algo"
	done
	# the objects a clone of a loose-only repository got are the server's
	check "$algo loose: the clone holds every object of the server" \
		diff <(all_objects "srv/$algo-loose.git") <(all_objects "clone-$algo loose")
	# a detached HEAD is cloned detached at the same commit
	w=work-$algo-detached
	if pw clone -q "$U/$algo-detached.git" "$w" 2>"$w.err"; then
		check "$algo detached: HEAD is the server's detached commit" test \
			"$(git -C "$w" rev-parse HEAD)" = "$(git -C "srv/$algo-detached.git" rev-parse HEAD)"
		check "$algo detached: work tree is clean" test -z "$(git -C "$w" status --porcelain)"
	else
		not_ok "$algo detached: work-tree clone"
		cat "$w.err"
	fi
	# a work-tree clone follows HEAD's branch
	w=work-$algo-mixed
	if pw clone -q "$U/$algo-mixed.git" "$w" 2>"$w.err"; then
		check "$algo mixed: work tree is clean and on main" test \
			"$(git -C "$w" status --porcelain)$(git -C "$w" symbolic-ref HEAD)" = refs/heads/main
	else
		not_ok "$algo mixed: work-tree clone"
		cat "$w.err"
	fi
	# alternates: followed with http.followRedirects=true, as Git
	for kind in alt http-alt; do
		clone_ok "$algo $kind" "$U/$algo-$kind.git" "srv/$algo-$kind.git" "$algo" \
			-c http.followRedirects=true
		c=noalt-$algo-$kind
		pw clone --bare "$U/$algo-$kind.git" "$c" 2>"$c.err" && rc=0 || rc=$?
		check "$algo $kind: without http.followRedirects=true the clone fails" test "$rc" -ne 0
		contains "$algo $kind: and says why" "$c.err" "alternate disabled by http.followRedirects"
		check "$algo $kind: and leaves no directory" test ! -e "$c"
	done
	# the empty repository clones as Git does
	c=clone-$algo-empty
	pw clone "$U/$algo-empty.git" "$c" >"$c.out" 2>&1 || { not_ok "$algo empty: clone"; cat "$c.out"; }
	contains "$algo empty: Git's warning" "$c.out" "warning: You appear to have cloned an empty repository."
	check "$algo empty: a repository is there" test -d "$c/.git"

	# incremental fetch: the server moves on (a loose commit on top of packs)
	git -C "src-$algo" commit -q --allow-empty -m "after the clone"
	git -C "src-$algo" tag -a v9 -m "new tag"
	git -C "src-$algo" push -q "../srv/$algo-mixed.git" main v9
	git -C "srv/$algo-mixed.git" update-server-info
	own_httpd_root
	w=work-$algo-mixed
	if [ -d "$w" ]; then
		pw -C "$w" fetch -q origin 2>"$w.fetch.err" || { not_ok "$algo: fetch"; cat "$w.fetch.err"; }
		check "$algo: fetch brought the new commit" test \
			"$(git -C "$w" rev-parse origin/main)" = "$(git -C "src-$algo" rev-parse main)"
		check "$algo: fetch brought the new tag" test \
			"$(git -C "$w" rev-parse v9)" = "$(git -C "src-$algo" rev-parse v9)"
		check "$algo: fetched repository is fsck --strict clean" fsck_ok "$w"
		check "$algo: a fetch with nothing new succeeds" pw -C "$w" fetch -q origin
	fi

	# packwire update-server-info: the same bytes as git's
	r=srv/$algo-pwinfo.git
	rm -f "$r/info/refs" "$r/objects/info/packs"
	check "$algo: packwire update-server-info" pw -C "$r" update-server-info
	cp "$r/info/refs" pw-refs-$algo
	cp "$r/objects/info/packs" pw-packs-$algo
	git -C "$r" update-server-info --force
	same_file "$algo: info/refs as git writes it" "$r/info/refs" pw-refs-$algo
	same_file "$algo: objects/info/packs as git writes it" "$r/objects/info/packs" pw-packs-$algo
	git -C "$r" repack -q -d # a second pack
	git -C "$r" update-server-info
	cp "$r/objects/info/packs" git-packs2-$algo
	git -C "$r" repack -q -d
	pw -C "$r" update-server-info
	cp "$r/objects/info/packs" pw-packs2-$algo
	pw -C "$r" update-server-info --force
	cp "$r/objects/info/packs" pw-packs3-$algo
	git -C "$r" update-server-info --force
	same_file "$algo: --force: objects/info/packs as git writes it" "$r/objects/info/packs" pw-packs3-$algo
	rm -f "$r/info/refs" "$r/objects/info/packs"
	pw -C "$r" update-server-info
	own_httpd_root
	c=git-clone-$algo-pwinfo
	if git clone -q --bare "$U/$algo-pwinfo.git" "$c" 2>"$c.err"; then
		check "$algo: stock git clones over dumb HTTP from packwire's info files" same_refs "$c" "$r"
		check "$algo: and its clone is fsck --strict clean" fsck_ok "$c"
	else
		not_ok "$algo: stock git clone from packwire's info files"
		cat "$c.err"
	fi

	# receive.updateServerInfo: a push into packwire receive-pack updates them
	git -C "src-$algo" commit -q --allow-empty -m "pushed"
	git -C "src-$algo" push -q --receive-pack="$PACKWIRE receive-pack" "../srv/$algo-push.git" main
	own_httpd_root
	c=git-clone-$algo-push
	if git clone -q --bare "$U/$algo-push.git" "$c" 2>"$c.err"; then
		check "$algo: after a push (receive.updateServerInfo) git's dumb clone has it" test \
			"$(git -C "$c" rev-parse main)" = "$(git -C "src-$algo" rev-parse main)"
	else
		not_ok "$algo: stock git clone after the push"
		cat "$c.err"
	fi
	cp "srv/$algo-push.git/info/refs" push-refs-$algo
	git -C "srv/$algo-push.git" update-server-info --force
	same_file "$algo: info/refs after the push as git writes it" "srv/$algo-push.git/info/refs" push-refs-$algo
done

# basic auth on every file (Git's t5550 password-protected repository):
# user:pass in the URL is used for all of them; without it, Git's words
AU=http://alice:secret@127.0.0.1:$HTTPD_PORT/dumb-auth
for algo in sha1 sha256; do
	clone_ok "$algo auth" "$AU/$algo-mixed.git" "srv/$algo-mixed.git" "$algo"
	c=noauth-$algo
	pw clone -q "http://127.0.0.1:$HTTPD_PORT/dumb-auth/$algo-mixed.git" "$c" 2>"$c.err" && rc=0 || rc=$?
	check "$algo auth: without credentials the clone fails" test "$rc" -ne 0
	contains "$algo auth: and says why" "$c.err" "could not read Username for 'http://127.0.0.1:$HTTPD_PORT'"
done

# Git's t5550: a corrupt .idx is noticed and leaves no pack; a second
# fetch uses the pack it needs and not the one it already has
for algo in sha1 sha256; do
	r=srv/$algo-badidx.git
	cp -R "srv/$algo-packed.git" "$r"
	p=$(ls "$r"/objects/pack/pack-*.idx)
	printf %0256d 0 | dd of="$p" bs=256 count=1 seek=1 conv=notrunc 2>/dev/null
	git init -q --bare --object-format="$algo" "badidx-$algo.git"
	check_fails "$algo: a fetch notices a corrupt .idx" \
		pw -C "badidx-$algo.git" fetch -q "$U/$algo-badidx.git" 'refs/heads/*:refs/heads/*'
	check "$algo: and leaves no pack" test -z "$(ls "badidx-$algo.git/objects/pack")"
	r=srv/$algo-branches.git
	git init -q --bare --object-format="$algo" "$r"
	git -C "src-$algo" push -q "../$r" main:branch1
	git -C "$r" repack -q -d
	git -C "src-$algo" commit -q --allow-empty -m b2
	git -C "src-$algo" push -q "../$r" main:branch2
	git -C "$r" repack -q -d
	git -C "$r" update-server-info
	own_httpd_root
	git init -q --bare --object-format="$algo" "branches-$algo.git"
	check "$algo: fetch of a first packed branch" \
		pw -C "branches-$algo.git" fetch -q "$U/$algo-branches.git" branch1:branch1
	check "$algo: fetch of a second one, in a pack of its own" \
		pw -C "branches-$algo.git" fetch -q "$U/$algo-branches.git" branch2:branch2
	check "$algo: the branches' repository is fsck --strict clean" fsck_ok "branches-$algo.git"
	check "$algo: it holds two packs" test "$(ls "branches-$algo.git"/objects/pack/*.pack | wc -l)" -eq 2
done

# a second static server: python3's http.server
PYPORT=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$T/srv" "$PYPORT" >py.log 2>&1 &
PYSRV=$!
trap 'kill $PYSRV 2>/dev/null || true; wait $PYSRV 2>/dev/null || true; http_cleanup' EXIT
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PYPORT/" && break; sleep 0.1; done
for algo in sha1 sha256; do
	clone_ok "python $algo mixed" "http://127.0.0.1:$PYPORT/$algo-mixed.git" "srv/$algo-mixed.git" "$algo"
	clone_ok "python $algo loose" "http://127.0.0.1:$PYPORT/$algo-loose.git" "srv/$algo-loose.git" "$algo"
done

finish
