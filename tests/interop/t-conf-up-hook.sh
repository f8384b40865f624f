#!/bin/bash
# uploadpack.packObjectsHook (issue 11, Git's t5544): from the global
# configuration (never the repository's own), packwire upload-pack gets the
# pack from `<hook> git pack-objects ...` fed Git's pack-objects input, and
# relays the hook's stderr; plain, shallow and filtered clones, v0 and v2,
# SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

cat >"$T/hook" <<'EOF'
#!/bin/sh
echo >&2 "hook running"
echo "$*" >hook.args
cat >hook.stdin
"$@" <hook.stdin >hook.stdout
cat hook.stdout
EOF
chmod +x "$T/hook"
printf '[uploadpack]\n\tpackObjectsHook = %s\n\tallowFilter = true\n' "$T/hook" >"$T/global"
UPH="env GIT_CONFIG_GLOBAL=$T/global $UP"

for algo in sha1 sha256; do
	R=$T/repo-$algo
	make_repo "$R" "$algo" 2>/dev/null
	G=$R/.git
	for v in 0 2; do
		w="$algo v$v"
		c=$T/c-$algo-$v
		rm -f "$G"/hook.*
		git -c protocol.version=$v clone -q --no-local --upload-pack="$UPH" "$R" "$c" 2>"$T/err" ||
			{ not_ok "$w: clone through the hook"; cat "$T/err"; }
		contains "$w: the hook ran (its stderr relayed)" "$T/err" "remote: hook running"
		check "$w: clone through the hook: fsck" fsck_ok "$c"
		check "$w: the hook got 'git pack-objects'" grep -q "^git pack-objects --revs" "$G/hook.args"
		check "$w: the hook's input replays" bash -c "cd '$G' && \$(cat hook.args) <hook.stdin >/dev/null"

		rm -rf "$c" "$c-git"
		git -c protocol.version=$v clone -q --no-local --depth=2 --upload-pack="$UPH" "$R" "$c" 2>"$T/err" ||
			{ not_ok "$w: shallow clone through the hook"; cat "$T/err"; }
		git -c protocol.version=$v clone -q --no-local --depth=2 "$R" "$c-git"
		check "$w: shallow clone through the hook: fsck" fsck_ok "$c"
		if diff <(all_objects "$c") <(all_objects "$c-git") >/dev/null; then ok "$w: shallow clone through the hook: objects as git's"
		else not_ok "$w: shallow clone through the hook: objects as git's"; fi

		rm -rf "$c"
		git -c protocol.version=$v clone -q --bare --no-local --filter=blob:none --upload-pack="$UPH" "$R" "$c" 2>"$T/err" ||
			{ not_ok "$w: partial clone through the hook"; cat "$T/err"; }
		check "$w: partial clone through the hook has no blob" bash -c \
			"! git -C '$c' cat-file --batch-all-objects --batch-check='%(objecttype)' | grep -q blob"
		check "$w: the hook got the filter" grep -q -- "--filter=blob:none" "$G/hook.args"
		rm -rf "$c"

		# the repository's own configuration is not trusted with a hook
		rm -f "$G"/hook.*
		git -C "$R" config uploadpack.packObjectsHook "$T/hook"
		git -c protocol.version=$v clone -q --no-local --upload-pack="$UP" "$R" "$c" 2>"$T/err" ||
			{ not_ok "$w: clone with a repository-config hook"; cat "$T/err"; }
		check "$w: a hook in the repository's config does not run" test ! -e "$G/hook.args"
		git -C "$R" config --unset uploadpack.packObjectsHook
		rm -rf "$c"
	done
done
finish
