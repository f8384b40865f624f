#!/usr/bin/env bash
# packwire http-backend under Apache against git http-backend under the same
# server, request by request (curl): the dumb files (status, content type,
# cache headers, bodies), gzip request bodies, and bad input (traversal,
# unknown service, wrong method, wrong content type, oversized and damaged
# gzip bodies, truncated bodies), each with a clear status and nothing
# written to the repository.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http-lib.sh"

if ! need_httpd; then
	skip "apache2 (apache2-bin), curl or openssl missing: scripts/install-deps.sh installs them"
	finish
fi

pkt() { printf '%04x%s' $((${#1} + 4)) "$1"; }

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
	git -C "srv/$algo.git" repack -q -a -d
	# one loose object to fetch as a file
	echo "a loose blob" | git -C "srv/$algo.git" hash-object -w --stdin >"loose-$algo"
done
start_httpd "$T/srv"
U=http://127.0.0.1:$HTTPD_PORT

# get BE PATH OUT [curl args]: "status content-type" on stdout, body in OUT,
# headers in OUT.h
get() {
	local be=$1 path=$2 out=$3
	shift 3
	curl -s --path-as-is -o "$out" -D "$out.h" -w '%{http_code} %{content_type}\n' "$@" "$U/$be/$path"
}
cache() { grep -i '^cache-control:' "$1.h" | tr -d '\r' || echo "no cache-control"; }

for algo in sha1 sha256; do
	r=$algo.git
	pack=$(basename "$(find "srv/$r/objects/pack" -name 'pack-*.pack' | head -1)")
	l=$(cat "loose-$algo")
	for path in HEAD info/refs objects/info/packs "objects/pack/$pack" \
		"objects/pack/${pack%.pack}.idx" "objects/${l:0:2}/${l:2}" \
		objects/info/alternates objects/info/http-alternates \
		"objects/${l:0:2}/$(echo "${l:2}" | tr 0-9a-f 1-9a-f0)" \
		"objects/pack/pack-$(echo "${pack:5:-5}" | tr 0-9a-f 1-9a-f0).pack" \
		info/nothing "objects/${l:0:2}/${l:2}x"; do
		name="$algo GET $path"
		get pw-open "$r/$path" pw.out >pw.st
		get git-open "$r/$path" git.out >git.st
		same_file "$name: status and content type as git's ($(cat git.st))" git.st pw.st
		# (git's 404 for a missing pack or object also carries the cache-
		# forever headers set before it looked; packwire's is no-cache)
		if grep -q '^200' git.st; then
			same_file "$name: cache headers as git's" <(cache git.out) <(cache pw.out)
		else
			contains "$name: no-cache on a refusal" pw.out.h "no-cache"
		fi
		same_file "$name: body as git's" git.out pw.out
	done
	# HEAD requests: headers only
	get pw-open "$r/info/refs" pw.out -I >pw.st
	contains "$algo HEAD info/refs: 200" pw.st "200 text/plain"

	# http.getanyfile=false: no dumb files, smart still served
	git -C "srv/$r" config http.getanyfile false
	get pw-open "$r/HEAD" pw.out >pw.st
	get git-open "$r/HEAD" git.out >git.st
	same_file "$algo http.getanyfile=false: HEAD refused as git" git.st pw.st
	get pw-open "$r/info/refs?service=git-upload-pack" pw.out >pw.st
	contains "$algo http.getanyfile=false: smart info/refs served" pw.st \
		"200 application/x-git-upload-pack-advertisement"
	git -C "srv/$r" config --unset http.getanyfile
	# http.uploadpack=false
	git -C "srv/$r" config http.uploadpack false
	get pw-open "$r/info/refs?service=git-upload-pack" pw.out >pw.st
	get git-open "$r/info/refs?service=git-upload-pack" git.out >git.st
	same_file "$algo http.uploadpack=false: refused as git ($(cat git.st))" git.st pw.st
	git -C "srv/$r" config --unset http.uploadpack
	# http.receivepack: true opens push to anonymous users, false closes it
	for val in true false; do
		git -C "srv/$r" config http.receivepack $val
		for be in pw git; do
			get "$be-open" "$r/info/refs?service=git-receive-pack" "$be.out" >"$be.anon"
			get "$be" "$r/info/refs?service=git-receive-pack" "$be.out" -u alice:secret >"$be.user"
		done
		same_file "$algo http.receivepack=$val, anonymous: as git ($(cat git.anon))" git.anon pw.anon
		same_file "$algo http.receivepack=$val, user: as git ($(cat git.user))" git.user pw.user
	done
	git -C "srv/$r" config --unset http.receivepack
	own_httpd_root

	# bad requests: the same status as git http-backend
	for req in "info/refs?service=git-foo" "info/refs?service=upload-pack" \
		"info/refs?service=git-receive-pack" "nothing/here" "../$r/HEAD" \
		"x/%2e%2e/$r/HEAD" "$r/../$r/HEAD"; do
		p=$r/$req
		case $req in ../* | x/*) p=$req ;; esac
		get pw-open "$p" pw.out >pw.st
		get git-open "$p" git.out >git.st
		same_file "$algo GET $p: status as git's ($(cat git.st))" git.st pw.st
	done
	for m in "POST HEAD" "POST info/refs" "GET git-upload-pack" "PUT git-receive-pack" \
		"DELETE objects/info/packs"; do
		# shellcheck disable=SC2086 # two words: method and path
		set -- $m
		get pw-open "$r/$2" pw.out -X "$1" >pw.st
		get git-open "$r/$2" git.out -X "$1" >git.st
		same_file "$algo $1 $2: status as git's ($(cat git.st))" git.st pw.st
		same_file "$algo $1 $2: Allow header as git's" <(grep -i '^allow:' git.out.h) \
			<(grep -i '^allow:' pw.out.h)
	done
	get pw-open "$r/git-upload-pack" pw.out -H 'Content-Type: text/plain' --data-binary x >pw.st
	get git-open "$r/git-upload-pack" git.out -H 'Content-Type: text/plain' --data-binary x >git.st
	same_file "$algo POST with a wrong content type: as git's ($(cat git.st))" git.st pw.st
	same_file "$algo POST with a wrong content type: message as git's" git.out pw.out

	# a gzipped v2 ls-refs request: the same answer as git's
	{
		pkt "command=ls-refs"
		[ "$algo" = sha1 ] || pkt "object-format=$algo"
		printf 0001
		pkt "peel"
		pkt "symrefs"
		printf 0000
	} | gzip -c >ls-refs.gz
	for be in pw git; do
		get "$be-open" "$r/git-upload-pack" "$be.out" -H 'Git-Protocol: version=2' \
			-H 'Content-Type: application/x-git-upload-pack-request' \
			-H 'Content-Encoding: gzip' --data-binary @ls-refs.gz >"$be.st"
	done
	same_file "$algo gzipped v2 ls-refs: status as git's" git.st pw.st
	same_file "$algo gzipped v2 ls-refs: answer as git's" git.out pw.out
	contains "$algo gzipped v2 ls-refs: lists main" pw.out "refs/heads/main"

	# bodies that must be refused before the service runs
	before=$(refs "srv/$r")
	nobj=$(find "srv/$r/objects" -type f | wc -l)
	head -c 20000000 /dev/zero | gzip -c >bomb.gz
	get pw-open "$r/git-upload-pack" pw.out -H 'Content-Type: application/x-git-upload-pack-request' \
		-H 'Content-Encoding: gzip' --data-binary @bomb.gz >pw.st
	contains "$algo gzip bomb to upload-pack: 413" pw.st "413"
	head -c 3000 /dev/urandom >garbage
	for svc in upload-pack receive-pack; do
		for enc in gzip x-gzip; do
			get pw "$r/git-$svc" pw.out -u alice:secret -H "Content-Encoding: $enc" \
				-H "Content-Type: application/x-git-$svc-request" --data-binary @garbage >pw.st
			contains "$algo damaged $enc body to $svc: 400" pw.st "400"
		done
	done
	# a push whose gzip stream is cut short
	{
		pkt "$(git -C "srv/$r" rev-parse main) $(git -C "srv/$r" rev-parse main~1) refs/heads/main"
		printf 0000
		printf 'PACK'
	} | gzip -c | head -c 40 >cut.gz
	get pw "$r/git-receive-pack" pw.out -u alice:secret -H 'Content-Encoding: gzip' \
		-H 'Content-Type: application/x-git-receive-pack-request' --data-binary @cut.gz >pw.st
	contains "$algo truncated gzip push: 400" pw.st "400"
	# GIT_HTTP_MAX_REQUEST_BUFFER-sized limit without gzip
	head -c 11000000 /dev/zero >big
	get pw-open "$r/git-upload-pack" pw.out -H 'Content-Type: application/x-git-upload-pack-request' \
		--data-binary @big >pw.st
	contains "$algo 11 MB upload-pack request: 413" pw.st "413"
	check "$algo nothing written by refused requests (refs)" test "$before" = "$(refs "srv/$r")"
	check "$algo nothing written by refused requests (objects)" \
		test "$nobj" = "$(find "srv/$r/objects" -type f | wc -l)"
	check "$algo still fsck --strict clean" fsck_ok "srv/$r"
done
stop_httpd

# the CGI program alone, as a web server would run it: traversal and a
# body shorter than its Content-Length
cgi() {
	env -i PATH="$PATH" GIT_PROJECT_ROOT="$T/srv" GIT_HTTP_EXPORT_ALL=1 SERVER_PROTOCOL=HTTP/1.1 "$@"
}
for pi in /../srv/sha1.git/HEAD /sha1.git/./HEAD //sha1.git/HEAD sha1.git/HEAD /sha1.git/..; do
	cgi REQUEST_METHOD=GET PATH_INFO="$pi" "$PACKWIRE" http-backend </dev/null >pw.cgi 2>pw.err
	cgi REQUEST_METHOD=GET PATH_INFO="$pi" "$GIT_HTTP_BACKEND" </dev/null >git.cgi 2>/dev/null
	same_file "CGI PATH_INFO=$pi: response as git's" git.cgi pw.cgi
	contains "CGI PATH_INFO=$pi: refused" pw.cgi "Status: "
done
# PATH_TRANSLATED alone (no GIT_PROJECT_ROOT): Git trusts the web server and
# serves a doubled slash as the file system resolves it (Git's t5560 does
# this); packwire still refuses a ".." segment
pt() {
	env -i PATH="$PATH" GIT_HTTP_EXPORT_ALL=1 SERVER_PROTOCOL=HTTP/1.1 REQUEST_METHOD=GET \
		GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0="*" "$@"
}
pt PATH_TRANSLATED="$T/srv//sha1.git/HEAD" "$PACKWIRE" http-backend </dev/null >pw.cgi 2>pw.err
pt PATH_TRANSLATED="$T/srv//sha1.git/HEAD" "$GIT_HTTP_BACKEND" </dev/null >git.cgi 2>/dev/null
same_file "CGI PATH_TRANSLATED with //: response as git's" git.cgi pw.cgi
pt PATH_TRANSLATED="$T/srv/sha1.git/../sha1.git/HEAD" "$PACKWIRE" http-backend </dev/null >pw.cgi 2>pw.err
contains "CGI PATH_TRANSLATED with ..: refused" pw.cgi "Status: 500"
# GIT_NAMESPACE: the dumb info/refs and HEAD show the namespace's refs, named
# without it (Git's t5551 "dumb clone via http-backend respects namespace")
for algo in sha1 sha256; do
	R=$T/srv/$algo.git
	git -C "$R" update-ref refs/namespaces/ns/refs/heads/other "$(git -C "$R" rev-parse HEAD)"
	git -C "$R" symbolic-ref refs/namespaces/ns/HEAD refs/namespaces/ns/refs/heads/other
	for f in info/refs HEAD; do
		pt GIT_NAMESPACE=ns PATH_TRANSLATED="$R/$f" "$PACKWIRE" http-backend </dev/null >pw.cgi 2>pw.err
		pt GIT_NAMESPACE=ns PATH_TRANSLATED="$R/$f" "$GIT_HTTP_BACKEND" </dev/null >git.cgi 2>/dev/null
		same_file "$algo: dumb $f in GIT_NAMESPACE as git's" git.cgi pw.cgi
	done
	contains "$algo: dumb HEAD in GIT_NAMESPACE names the namespace's branch" pw.cgi "ref: refs/heads/other"
	# a GIT_PROTOCOL the web server sets, even empty, wins over the header
	pt GIT_PROTOCOL= HTTP_GIT_PROTOCOL=version=2 QUERY_STRING=service=git-upload-pack \
		PATH_TRANSLATED="$R/info/refs" "$PACKWIRE" http-backend </dev/null >pw.cgi 2>pw.err
	contains "$algo: an empty GIT_PROTOCOL from the server keeps v0" pw.cgi "symref=HEAD:"
done
printf 'short' | cgi REQUEST_METHOD=POST PATH_INFO=/sha1.git/git-upload-pack CONTENT_LENGTH=100 \
	CONTENT_TYPE=application/x-git-upload-pack-request "$PACKWIRE" http-backend >pw.cgi 2>pw.err
contains "CGI body shorter than CONTENT_LENGTH: 400" pw.cgi "Status: 400"
finish
