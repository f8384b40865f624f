#!/usr/bin/env bash
# The browse pages of `packwire serve` (issue 28, item 4), loaded by
# headless Chromium (Debian's chromium) from a server on a free loopback
# port: GET / lists the repositories under the base path (name, object
# format, description, last change), GET /<repo>/ shows HEAD's branch, the
# branches and tags with their commits, the 20 latest commits on HEAD and
# the clone URLs (HTTP and, with --daemon-url, git://), for SHA-1 and SHA-256
# repositories. The DOM Chromium built is checked: the expected content is
# there, and ref names, commit subjects, authors, descriptions and directory
# names holding <script>, <img ...>, quotes, entities, control bytes, invalid
# UTF-8 and a right-to-left override are text (no element, no handler
# injected). hideRefs hides, a symlink out of the base path is not listed,
# a repository of 1200 branches and 300 commits costs a bounded page, and
# bad paths get 404 or 405. Screenshots are taken (PW_BROWSE_SHOTS=DIR
# copies them there: docs/ holds the ones of the README).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

mkdir -p srv outside
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
	printf 'The %s demo repository\n' "$algo" >"srv/$algo.git/description"
done
# a non-bare repository, listed by its directory
git clone -q src-sha256 srv/work-sha256
# hideRefs: a branch (and its commit) nobody may see
git -C srv/sha1.git update-ref refs/heads/secret "$(git -C srv/sha1.git commit-tree -m 'SECRET-SUBJECT' \
	-p main "$(git -C srv/sha1.git rev-parse 'main^{tree}')")"
git -C srv/sha1.git config uploadpack.hideRefs refs/heads/secret
# a symlink out of the base path
git init -q --bare outside/escape.git
git -C outside/escape.git commit-tree -m x "$(git -C outside/escape.git mktree </dev/null)" >/dev/null
ln -s "$T/outside/escape.git" srv/escape.git

# hostile repositories, one per algorithm
for algo in sha1 sha256; do
	r=srv/hostile-$algo.git
	git init -q --bare --object-format=$algo "$r"
	tree=$(git -C "$r" mktree </dev/null)
	{
		printf 'tree %s\n' "$tree"
		printf 'author Mal>lory "&amp;" %s \001 \377 <m@example.com> 1700000000 +0100\n' "'q'"
		printf 'committer C <c@example.com> 1700000000 +0100\n\n'
		printf '<script>alert("x")</script> & %s \001\007 ctl \377\376 bad \342\200\256 rtl\n\nbody\n' "'q'"
	} >"msg-$algo"
	c=$(git -C "$r" hash-object -t commit -w --literally --stdin <"msg-$algo")
	git -C "$r" update-ref 'refs/heads/<script>alert(1)</script>' "$c"
	git -C "$r" update-ref "refs/heads/\"quote'd\"&amp;" "$c"
	git -C "$r" update-ref "refs/heads/bad-$(printf '\377\376')" "$c"
	git -C "$r" update-ref 'refs/tags/<img-src=x-onerror=alert(2)>' "$c"
	git -C "$r" update-ref refs/tags/a-tree "$tree"
	git -C "$r" symbolic-ref HEAD 'refs/heads/<script>alert(1)</script>'
	printf '<b>bold</b> & "d" \001 <script>alert(4)</script>\n' >"$r/description"
	# a branch at a commit too large to read for a page (2 MiB message)
	{
		printf 'tree %s\nauthor A <a@x> 1700000000 +0000\ncommitter A <a@x> 1700000000 +0000\n\n' "$tree"
		head -c 2200000 /dev/zero | tr '\0' x
	} | git -C "$r" hash-object -t commit -w --literally --stdin >big-$algo
	git -C "$r" update-ref refs/heads/huge "$(cat big-$algo)"
	# a 2 MiB tag, and a chain of 10 tags: not followed for a page
	{
		printf 'object %s\ntype commit\ntag big\ntagger T <t@x> 1700000000 +0000\n\n' "$c"
		head -c 2200000 /dev/zero | tr '\0' y
	} | git -C "$r" hash-object -t tag -w --literally --stdin >bigtag-$algo
	git -C "$r" update-ref refs/tags/big-tag "$(cat bigtag-$algo)"
	t=$c type=commit
	for i in $(seq 1 10); do
		t=$(printf 'object %s\ntype %s\ntag t%s\ntagger T <t@x> 1700000000 +0000\n\nlevel %s\n' \
			"$t" $type $i $i | git -C "$r" hash-object -t tag -w --stdin)
		type=tag
	done
	git -C "$r" update-ref refs/tags/deep-tag "$t"
done
# a directory name with markup and quotes (its '/' makes two levels)
mkdir -p 'srv/we<i>rd</i> "x"'
git init -q --bare 'srv/we<i>rd</i> "x"/r.git'

# many branches and a long history: a bounded page
git init -q --bare --object-format=sha256 srv/many.git
git -C src-sha256 log --format=%H -1 >/dev/null
(
	cd srv/many.git
	tree=$(git mktree </dev/null)
	p=$(git commit-tree -m "commit 1" "$tree")
	for i in $(seq 2 300); do
		p=$(GIT_COMMITTER_DATE="$((1700000000 + i)) +0000" GIT_AUTHOR_DATE="$((1700000000 + i)) +0000" \
			git commit-tree -m "commit $i" -p "$p" "$tree")
	done
	git update-ref refs/heads/main "$p"
	for i in $(seq 1 1200); do echo "$p refs/heads/b$i"; done >packed-refs
)

PW_BROWSE_DAEMON=git://127.0.0.1:9418
start_serve browse "$T/srv" --daemon-url=$PW_BROWSE_DAEMON/ --access-log="$T/access.log"
PID=$SERVE_PID PORT=$SERVE_PORT
U=http://127.0.0.1:$PORT

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 30 "$@"; }

# ---- without a browser: the answers, bad paths, bounds ----------------------
check "GET / is 200" test "$(code "$U/")" = 200
check "GET / is text/html, utf-8" eval \
	'curl -s -D - -o /dev/null "$U/" | tr -d "\r" | grep -qx "Content-Type: text/html; charset=utf-8"'
check "GET / forbids scripts (Content-Security-Policy)" eval \
	'curl -s -D - -o /dev/null "$U/" | tr -d "\r" | grep -q "^Content-Security-Policy: default-src .none."'
check "HEAD / is 200 without a body" eval 'test "$(curl -s -I "$U/" | head -1 | tr -d "\r")" = "HTTP/1.1 200 OK"'
check "POST / is 405" test "$(code -d x "$U/")" = 405
check "GET of a directory that is not there is 404" test "$(code "$U/nothing-here/")" = 404
check "GET through a symlink out of the base path is 404" test "$(code "$U/escape.git/")" = 404
check "GET inside a repository is 404" test "$(code "$U/sha1.git/objects/")" = 404
check "GET of an aliased path (%2e%2e) is 404" test "$(code --path-as-is "$U/%2e%2e/")" = 404
check "GET of // is 404" test "$(code --path-as-is "$U//")" = 404
check "GET of a 4000-byte path is 404" test "$(code "$U/$(head -c 4000 /dev/zero | tr '\0' a)/")" = 404
check "GET of a path with a control byte is 404" test "$(code "$U/%01/")" = 404
check "the git routes still work beside the pages (info/refs)" \
	test "$(code "$U/sha1.git/info/refs?service=git-upload-pack")" = 200
curl -s "$U/many.git/" >many.html
check "1200 branches: the page is bounded ($(wc -c <many.html) bytes)" test "$(wc -c <many.html)" -lt 200000
contains "1200 branches (and main): all are counted" many.html "Branches (1201)"
contains "1200 branches: 100 shown, the rest said" many.html "1101 more not shown"
check "300 commits: 20 shown" test "$(grep -o '<tr class="commit">' many.html | wc -l)" = 20
contains "300 commits: the newest first" many.html ">commit 300<"
check_fails "300 commits: not the 21st" grep -q '>commit 280<' many.html
for algo in sha1 sha256; do
	curl -s "$U/hostile-$algo.git/" >"hostile-$algo.curl"
	contains "$algo: a commit over 1 MiB is not read for the page" "hostile-$algo.curl" "(commit too large to show)"
	contains "$algo: a tag of a tree says so" "hostile-$algo.curl" "(a tree)"
	check "$algo: a tag over 1 MiB and a chain of 10 tags are not followed" \
		test "$(grep -o '(a tag too large or too deep to show)' "hostile-$algo.curl" | wc -l)" = 2
done
start_serve nobrowse "$T/srv" --no-browse
check "--no-browse: GET / is 404" test "$(code "http://127.0.0.1:$SERVE_PORT/")" = 404
stop_serve $SERVE_PID

# ---- Chromium -------------------------------------------------------------------
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
	skip "chromium missing (Debian's chromium package): scripts/install-deps.sh installs it"
	stop_serve $PID
	finish
fi
n=0
chrome() { # chrome ARGS... URL: one headless run with a fresh profile
	n=$((n + 1))
	timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$T/profile-$n" "$@" 2>>chromium.log
}
dom() { # dom NAME URL: the DOM Chromium built, and what dom-check.py finds in it
	chrome --dump-dom "$2" >"$1.dom" || true
	python3 "$PW_SRC/tests/interop/dom-check.py" "$1.dom" >"$1.facts" ||
		echo "facts: the DOM did not parse" >>"$1.facts"
}
ALLOWED="a body code footer h1 h2 head header html main meta p span style table tbody td th thead title tr"
only_allowed() { # only_allowed FACTS: no element beyond the page's own
	local t
	for t in $(sed -n 's/^tags //p' "$1"); do
		case " $ALLOWED " in *" $t "*) ;; *) echo "    unexpected element <$t>" >&2; return 1 ;; esac
	done
}

dom index "$U/"
check "index: Chromium built a DOM" grep -q '^tags .*table' index.facts
check "index: only the page's own elements" only_allowed index.facts
check "index: no script handler" grep -qx 'handlers 0' index.facts
for r in sha1.git sha256.git work-sha256 hostile-sha1.git hostile-sha256.git many.git \
	'we<i>rd</i> "x"/r.git'; do
	contains "index: lists $r" index.facts "text $r"
done
check_fails "index: does not list the symlink out of the base path" grep -q 'escape' index.facts
contains "index: the object format" index.facts "text sha256"
contains "index: a description" index.facts "text The sha256 demo repository"
contains "index: a hostile description is text" index.facts \
	"text <b>bold</b> & \"d\" $(printf '\342\220\201') <script>alert(4)</script>"
contains "index: the last change" index.facts "text 2023-11-14 22:13 +0000"
contains "index: the odd directory's link is %-encoded" index.facts \
	"link /we%3Ci%3Erd%3C/i%3E%20%22x%22/r.git/"
check "index: ... and leads to its page" test \
	"$(code "$U/we%3Ci%3Erd%3C/i%3E%20%22x%22/r.git/")" = 200
chrome --window-size=1100,430 --screenshot="$T/browse-index.png" "$U/" || true

for algo in sha1 sha256; do
	dom $algo "$U/$algo.git/"
	f=$algo.facts
	check "$algo page: only the page's own elements, no handler" eval \
		'only_allowed $f && grep -qx "handlers 0" $f'
	contains "$algo page: the object format" $f "text $algo"
	contains "$algo page: HEAD's branch" $f "text main"
	contains "$algo page: the HTTP clone URL" $f "text git clone $U/$algo.git"
	contains "$algo page: the git:// clone URL" $f "text git clone $PW_BROWSE_DAEMON/$algo.git"
	contains "$algo page: the branches" $f "text Branches (2)"
	contains "$algo page: a branch with its commit" $f \
		"text $(git -C srv/$algo.git rev-parse --short=12 topic)"
	contains "$algo page: the tags" $f "text Tags (3)"
	contains "$algo page: an annotated tag shows its commit" $f "text v0.1"
	contains "$algo page: a commit's subject" $f "text merge topic"
	contains "$algo page: its author" $f "text Test"
	check "$algo page: all of HEAD's 7 commits" grep -qx 'rows log 8' $f
	# the URL the page gives clones
	url=$(sed -n "s|^text git clone \\($U/.*\\)|\\1|p" $f | head -1)
	git clone -q --bare "$url" "clone-$algo" 2>"clone-$algo.err" ||
		{ not_ok "$algo page: clone from its URL"; cat "clone-$algo.err"; }
	check "$algo page: a clone from its URL is fsck clean with the server's (visible) refs" eval \
		'fsck_ok clone-$algo && diff <(refs clone-$algo) <(refs srv/$algo.git | grep -v refs/heads/secret)'
done
check "sha1 page: hideRefs hides the branch" eval '! grep -q "secret" sha1.facts'
check "sha1 page: ... and its commit" eval '! grep -q "SECRET-SUBJECT" sha1.facts'
chrome --window-size=1100,960 --screenshot="$T/browse-repo.png" "$U/sha256.git/" || true

ctl=$(printf '\342\220\201\342\220\207') # U+2401 U+2407: the control pictures
bad=$(printf '\357\277\275')              # U+FFFD
for algo in sha1 sha256; do
	dom hostile-$algo "$U/hostile-$algo.git/"
	f=hostile-$algo.facts
	check "hostile $algo: only the page's own elements" only_allowed $f
	check "hostile $algo: no script handler" grep -qx 'handlers 0' $f
	contains "hostile $algo: HEAD's branch <script>... is text" $f "text <script>alert(1)</script>"
	contains "hostile $algo: a branch with quotes and an entity is text" $f "text \"quote'd\"&amp;"
	contains "hostile $algo: a branch of invalid UTF-8 shows U+FFFD" $f "text bad-$bad$bad"
	contains "hostile $algo: a tag <img ...> is text" $f "text <img-src=x-onerror=alert(2)>"
	contains "hostile $algo: the subject is text, control bytes as pictures, invalid UTF-8 and the override as U+FFFD" \
		$f "text <script>alert(\"x\")</script> & 'q' $ctl ctl $bad$bad bad $bad rtl"
	contains "hostile $algo: the author is text" $f "text Mal>lory \"&amp;\" 'q' $(printf '\342\220\201') $bad"
	contains "hostile $algo: the description is text" $f "text <b>bold</b> & \"d\""
	contains "hostile $algo: its date in its offset" $f "text 2023-11-14 23:13 +0100"
done
chrome --window-size=1100,700 --screenshot="$T/browse-hostile.png" "$U/hostile-sha1.git/" || true

for s in browse-index browse-repo browse-hostile; do
	check "screenshot $s.png is a PNG" eval \
		'test "$(head -c 8 "$s.png" | od -An -tx1 | tr -d " \n")" = 89504e470d0a1a0a && test "$(wc -c <"$s.png")" -gt 5000'
done
if [ -n "${PW_BROWSE_SHOTS:-}" ]; then
	cp browse-index.png browse-repo.png "$PW_BROWSE_SHOTS/"
fi

stop_serve $PID
check "serve exits 0" test "$SERVE_RC" = 0
serve_logs_clean browse
finish
