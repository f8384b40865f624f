#!/bin/bash
# Request bodies git http-backend refuses (issue 11, Git's t5562), SHA-1 and
# SHA-256: an empty POST to upload-pack or receive-pack is a client that hung
# up ("fatal: the remote end hung up unexpectedly" in the log, no ERR packet
# in the answer, as with git's services), and so is an empty stateless
# request to the commands themselves; a CONTENT_LENGTH that overflows is
# "fatal: failed to parse CONTENT_LENGTH" with exit 0 for a service's POST,
# and ignored by a GET, as Git reads it only to start the service. A length
# over the request buffer is refused before the body is read, gzip or not.
. "$(dirname "$0")/lib.sh"

HB="$PACKWIRE http-backend"

post() { # <svc> <body-file> <who: pw|git> [CONTENT_LENGTH]
	local hb=$HB len=${4-$(stat -c %s "$2")}
	[ "$3" = git ] && hb="git http-backend"
	env CONTENT_TYPE="application/x-git-$1-pack-request" QUERY_STRING="/r.git/git-$1-pack" \
		PATH_TRANSLATED="$R/.git/git-$1-pack" GIT_HTTP_EXPORT_ALL=TRUE REQUEST_METHOD=POST \
		HTTP_CONTENT_ENCODING=identity CONTENT_LENGTH="$len" $hb <"$2" >"$T/out" 2>"$T/err"
}

: >"$T/empty"
for algo in sha1 sha256; do
	R=$T/r-$algo
	make_repo "$R" "$algo"
	git -C "$R" config http.receivepack true
	for svc in upload receive; do
		for who in git pw; do
			post $svc "$T/empty" $who || true
			cp "$T/err" "$T/err-$who"
			check "$algo $svc empty body ($who): no ERR packet answered" \
				bash -c "! grep -qa ERR '$T/out'"
		done
		contains "$algo $svc empty body: git's fatal" "$T/err-git" \
			"fatal: the remote end hung up unexpectedly"
		contains "$algo $svc empty body: ours says the same" "$T/err-pw" \
			"fatal: the remote end hung up unexpectedly"
		rc=0
		$PACKWIRE $svc-pack --stateless-rpc "$R" </dev/null 2>"$T/err" >"$T/out" || rc=$?
		check "$algo $svc --stateless-rpc with no request fails (128)" test $rc = 128
		contains "$algo $svc ... with Git's message" "$T/err" "the remote end hung up unexpectedly"
		check "$algo $svc ... and nothing on stdout" test ! -s "$T/out"
		printf 0000 >"$T/flush"
		check "$algo $svc --stateless-rpc with just a flush is fine" \
			$PACKWIRE $svc-pack --stateless-rpc "$R" <"$T/flush"
	done
	check "$algo: v2 upload-pack with no request is fine (Git's serve loop)" \
		env GIT_PROTOCOL=version=2 $PACKWIRE upload-pack --stateless-rpc "$R" </dev/null

	check "$algo: CONTENT_LENGTH overflow: exit 0" post upload "$T/empty" pw 9223372036854775808
	contains "$algo: ... fatal: failed to parse CONTENT_LENGTH" "$T/err" \
		"fatal: failed to parse CONTENT_LENGTH: 9223372036854775808"
	contains "$algo: ... answered 500" "$T/out" "Status: 500"
	env QUERY_STRING=service=git-upload-pack PATH_TRANSLATED="$R/.git/info/refs" \
		GIT_HTTP_EXPORT_ALL=TRUE REQUEST_METHOD=GET CONTENT_LENGTH=nonsense \
		$HB </dev/null >"$T/out" 2>"$T/err"
	contains "$algo: a GET ignores CONTENT_LENGTH" "$T/out" "# service=git-upload-pack"
	check "$algo: ... without a word" test ! -s "$T/err"

	# issue 26: a gzip upload-pack request announced over the request buffer
	# is refused from its length, before stdin is read (git dies there too)
	printf 0000 | gzip >"$T/flush.gz"
	env GIT_HTTP_MAX_REQUEST_BUFFER=1000 CONTENT_TYPE=application/x-git-upload-pack-request \
		PATH_TRANSLATED="$R/.git/git-upload-pack" GIT_HTTP_EXPORT_ALL=TRUE REQUEST_METHOD=POST \
		HTTP_CONTENT_ENCODING=gzip CONTENT_LENGTH=20000000 $HB <"$T/flush.gz" >"$T/out" 2>"$T/err"
	contains "$algo: gzip body announced over the buffer: 413" "$T/out" "Status: 413"
	contains "$algo: ... with git's reason" "$T/err" \
		"request was larger than our maximum size (1000); try setting GIT_HTTP_MAX_REQUEST_BUFFER"
done
finish
