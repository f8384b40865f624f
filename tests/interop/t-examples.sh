#!/bin/bash
# The installed product: `cmake --install` into a temporary prefix, check what
# landed there (versioned soname, headers, packwire.pc, only pw_* symbols
# exported), build examples/ from that prefix through pkg-config (shared, and
# static for serve-upload-pack) and run them against stock git, SHA-1 and
# SHA-256: clone-refs clones what git made (path, file://, ssh) and must print
# what git for-each-ref / rev-parse --show-object-format say in the clone;
# serve-upload-pack serves git clone (v2 and v0, file:// and ssh).
. "$(dirname "$0")/lib.sh"

CC=${CC:-cc}
for tool in "$CC" pkg-config cmake; do
	command -v "$tool" >/dev/null || { echo "skipped: $tool not found"; exit 77; }
done
[ -e "$PW_BUILD/libpackwire.so" ] || { echo "skipped: $PW_BUILD has no libpackwire.so"; exit 77; }

# ---- install ----------------------------------------------------------------
prefix=$T/prefix
cmake --install "$PW_BUILD" --prefix "$prefix" >install.log
pc=$(find "$prefix" -name packwire.pc | head -1)
check "packwire.pc installed" test -n "$pc"
export PKG_CONFIG_PATH=${pc%/*}
libdir=$(pkg-config --variable=libdir packwire)
check "pkg-config names the install prefix" test "$libdir" -ef "${pc%/pkgconfig/*}"
version=$(pkg-config --modversion packwire)
check "libpackwire.so.$version installed" test -f "$libdir/libpackwire.so.$version"
check "libpackwire.so -> soname link" test -e "$libdir/libpackwire.so"
check "libpackwire.a installed" test -f "$libdir/libpackwire.a"
check "packwire installed" test -x "$prefix/bin/packwire"
check "installed packwire runs" "$prefix/bin/packwire" init -q --bare "$T/init-check.git"
(cd "$PW_SRC/include/packwire" && ls *.h) >headers.src
(cd "$(pkg-config --variable=includedir packwire)/packwire" && ls *.h) >headers.inst
same_file "every public header installed" headers.src headers.inst
if command -v readelf >/dev/null; then
	readelf -d "$libdir/libpackwire.so" >dyn.txt
	contains "soname is libpackwire.so.${version%%.*}" dyn.txt "[libpackwire.so.${version%%.*}]"
fi
if command -v nm >/dev/null; then
	nm -D --defined-only "$libdir/libpackwire.so" | awk 'NF == 3 { print $3 }' >exports.txt
	check "the shared library exports pw_* symbols" grep -q '^pw_repo_open$' exports.txt
	# (ASan adds an ODR indicator per exported variable)
	check "... and nothing else" test -z "$(grep -v -e '^pw_' -e '^__odr_asan\.pw_' exports.txt)"
fi

# ---- build the examples from the installed tree -------------------------
cflags=(-std=c11 -Wall -Wextra -Werror)
# a sanitizer build installs an instrumented library: its users need the runtime
if grep -q '^PW_SANITIZE:BOOL=ON' "$PW_BUILD/CMakeCache.txt" 2>/dev/null; then
	cflags+=("-fsanitize=address,undefined")
fi
for ex in clone-refs serve-upload-pack; do
	# shellcheck disable=SC2046 # pkg-config output is meant to be split
	check "$ex builds with pkg-config --cflags --libs packwire" \
		"$CC" "${cflags[@]}" -o "$ex" "$PW_SRC/examples/$ex.c" \
		$(pkg-config --cflags --libs packwire) -Wl,-rpath,"$libdir"
done
# static: the archive, then the private dependencies from pkg-config --static
# shellcheck disable=SC2046
check "serve-upload-pack links statically (pkg-config --static)" \
	"$CC" "${cflags[@]}" -o serve-static "$PW_SRC/examples/serve-upload-pack.c" \
	$(pkg-config --cflags packwire) "$libdir/libpackwire.a" \
	$(pkg-config --static --libs packwire | sed 's/-lpackwire\b//')
[ -x clone-refs ] && [ -x serve-upload-pack ] && [ -x serve-static ] || finish
if command -v readelf >/dev/null; then
	readelf -d clone-refs >dyn-ex.txt
	contains "clone-refs needs libpackwire.so.${version%%.*}" dyn-ex.txt "[libpackwire.so.${version%%.*}]"
	readelf -d serve-static >dyn-static.txt
	check "serve-static does not need libpackwire.so" test -z "$(grep libpackwire dyn-static.txt)"
fi
# the installed library is the one that runs (no build-tree path leaks in)
ldd ./clone-refs >ldd.txt 2>&1 || true
contains "clone-refs loads the installed library" ldd.txt "$libdir/libpackwire.so"

# ---- run them against stock git -----------------------------------------
use_fake_ssh
# what clone-refs must print for the clone in $1
expected() {
	echo "object-format $(git -C "$1" rev-parse --show-object-format)"
	git -C "$1" for-each-ref --format='%(objectname) %(refname)'
}
clean_tree() { test -z "$(git -C "$1" status --porcelain)"; }

for algo in sha1 sha256; do
	src=$T/src-$algo
	make_repo "$src" "$algo"
	git clone -q "file://$src" "git-$algo"

	# (a) clone-refs: clone what git made
	for how in path file ssh bare; do
		out=$T/clone-$how-$algo
		case $how in
		path) url=$src ;;
		file | bare) url=file://$src ;;
		ssh) url=localhost:$src ;;
		esac
		opt=()
		[ "$how" = bare ] && opt=(--bare)
		if ! ./clone-refs "${opt[@]}" "$url" "$out" >"$how-$algo.out" 2>"$how-$algo.err"; then
			not_ok "$algo: clone-refs ($how) failed"
			sed 's/^/    /' "$how-$algo.err"
			continue
		fi
		expected "$out" >"$how-$algo.expected"
		same_file "$algo: clone-refs ($how) prints the clone's object format and refs" \
			"$how-$algo.expected" "$how-$algo.out"
		contains "$algo: clone-refs ($how) reports $algo" "$how-$algo.out" "object-format $algo"
		if [ "$how" = bare ]; then
			check "$algo: clone-refs ($how) has the source's refs" same_refs "$out" "$src"
		else
			check "$algo: clone-refs ($how) has git clone's refs" same_refs "$out" "git-$algo"
			check "$algo: clone-refs ($how) work tree clean" clean_tree "$out"
		fi
		check "$algo: clone-refs ($how) passes fsck --strict" fsck_ok "$out"
	done
	git init -q --bare --object-format="$algo" "empty-$algo.git"
	./clone-refs "file://$T/empty-$algo.git" "empty-clone-$algo" >"empty-$algo.out" 2>/dev/null || true
	echo "object-format $algo" >"empty-$algo.expected"
	same_file "$algo: clone-refs of an empty repository" "empty-$algo.expected" "empty-$algo.out"

	# (b) serve-upload-pack behind git clone
	for v in 2 0; do
		out=$T/served-v$v-$algo
		check "$algo: git clone (protocol v$v) from serve-upload-pack" \
			git -c protocol.version=$v clone -q --upload-pack="$T/serve-upload-pack" \
			"file://$src" "$out"
		check "$algo: served v$v clone passes fsck --strict" fsck_ok "$out"
		check "$algo: served v$v clone has git clone's refs" same_refs "$out" "git-$algo"
	done
	check "$algo: git clone --mirror over ssh from serve-upload-pack (static)" \
		git clone -q --mirror --upload-pack="$T/serve-static" "localhost:$src" "mirror-$algo.git"
	check "$algo: mirror has the source's refs" same_refs "mirror-$algo.git" "$src"
	check "$algo: mirror passes fsck --strict" fsck_ok "mirror-$algo.git"
done
check_fails "serve-upload-pack refuses a directory that is no repository" \
	git clone -q --upload-pack="$T/serve-upload-pack" "file://$T/prefix" nothing 2>/dev/null

finish
