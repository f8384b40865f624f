#!/bin/bash
# Self-test of lint.py: on a fixture tree holding one violation of each kind
# it must fail and report exactly fixture.expected; on a clean tree it must
# pass. Usage: self-test.sh [python3]
set -u
here=$(cd "$(dirname "$0")" && pwd)
py=${1:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$here/fixture" || exit 1
"$py" "$here/lint.py" --allowed allowed.txt . >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -ne 1 ]; then
	echo "FAIL: lint exited $rc on the fixture (expected 1)"
	cat "$tmp/out"
	exit 1
fi
if ! diff -u "$here/fixture.expected" "$tmp/out"; then
	echo "FAIL: lint output on the fixture differs from fixture.expected"
	exit 1
fi

# A clean tree passes (and needs no exceptions file).
mkdir -p "$tmp/clean/src/pack" "$tmp/clean/src/odb"
cp "$here/fixture/src/pack/ok.c" "$tmp/clean/src/pack/"
: >"$tmp/clean/src/odb/own.h"
if ! "$py" "$here/lint.py" "$tmp/clean" >"$tmp/out2" 2>&1; then
	echo "FAIL: lint rejected a clean tree"
	cat "$tmp/out2"
	exit 1
fi
# A tree without sources, or --objects where there are none, fails: a wrong
# path must not pass for a clean tree.
mkdir -p "$tmp/nosrc" "$tmp/noobj"
"$py" "$here/lint.py" "$tmp/nosrc" >"$tmp/out4" 2>&1
if [ $? -ne 1 ] || ! grep -q 'no source files under src/' "$tmp/out4"; then
	echo "FAIL: lint passed a tree without sources"
	cat "$tmp/out4"
	exit 1
fi
"$py" "$here/lint.py" --objects "$tmp/noobj" "$tmp/clean" >"$tmp/out5" 2>&1
if [ $? -ne 1 ] || ! grep -q 'noobj: no object files' "$tmp/out5"; then
	echo "FAIL: lint passed --objects on a folder without object files"
	cat "$tmp/out5"
	exit 1
fi
# Sizes: a function body of 121 lines fails (one of 120 passes), and so does
# a file of 1,501 lines; each names file:line and the count.
mkdir -p "$tmp/sizes/src/util"
{
	printf 'int pw_ok(void)\n{\n'
	for i in $(seq 120); do printf '\t;\n'; done
	printf '}\n\nstatic int too_long(int a,\n                    int b)\n{\n'
	for i in $(seq 120); do printf '\t;\n'; done
	printf '\treturn a + b;\n}\n'
	for i in $(seq 1252); do printf '/* filler */\n'; done
} >"$tmp/sizes/src/util/long.c"
"$py" "$here/lint.py" "$tmp/sizes" >"$tmp/out6" 2>&1
rc=$?
printf '%s\n' \
	'src/util/long.c:125: function too_long has a body of 121 lines (at most 120: cut it in pieces) [function-length:too_long]' \
	'src/util/long.c:1501: 1501 lines (at most 1500: split it by responsibility) [file-length]' >"$tmp/want6"
if [ $rc -ne 1 ] || ! grep -v '^lint: FAILED' "$tmp/out6" | sort | diff -u "$tmp/want6" -; then
	echo "FAIL: lint missed or misreported a long function or file (exit $rc)"
	cat "$tmp/out6"
	exit 1
fi
# docs/architecture.md's table must give every layer of RANK its rank.
mkdir -p "$tmp/doc/src/pack" "$tmp/doc/docs"
cp "$here/fixture/src/pack/ok.c" "$tmp/doc/src/pack/"
"$py" - "$here/lint.py" >"$tmp/doc/docs/architecture.md" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("lint", sys.argv[1])
lint = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lint)
print("| Rank | Layer |\n|---|---|")
for layer, rank in sorted(lint.RANK.items(), key=lambda kv: kv[1]):
    print("| %d | `%s` | the %s layer |" % (rank, layer, layer))
PY
if ! "$py" "$here/lint.py" "$tmp/doc" >"$tmp/out7" 2>&1; then
	echo "FAIL: lint rejected a table of layers that matches RANK"
	cat "$tmp/out7"
	exit 1
fi
sed -i -e 's/^| [0-9]* | `odb` |/| 4 | `odb` |/' -e '/`refs`/d' "$tmp/doc/docs/architecture.md"
"$py" "$here/lint.py" "$tmp/doc" >"$tmp/out7" 2>&1
if [ $? -ne 1 ] || ! grep -q '^docs/architecture.md:[0-9]*: layer odb has rank 4 here, 3 in lint.py' "$tmp/out7" ||
	! grep -q '^docs/architecture.md: layer refs of lint.py.s RANK has no row' "$tmp/out7"; then
	echo "FAIL: lint missed a table of layers that differs from RANK"
	cat "$tmp/out7"
	exit 1
fi
rm "$tmp/doc/docs/architecture.md"
"$py" "$here/lint.py" "$tmp/doc" >"$tmp/out7" 2>&1
if [ $? -ne 1 ] || ! grep -q '^docs/architecture.md: missing' "$tmp/out7"; then
	echo "FAIL: lint passed a tree with docs/ but without docs/architecture.md"
	cat "$tmp/out7"
	exit 1
fi
# Calls between layers, from object files: util calling into pack fails.
cc=${CC:-cc}
if command -v "$cc" >/dev/null 2>&1; then
	mkdir -p "$tmp/calls/src/util" "$tmp/calls/src/pack" "$tmp/calls/obj/src/util" "$tmp/calls/obj/src/pack"
	printf 'int pw_pack_thing(void);\nint pw_util_thing(void)\n{\n\treturn pw_pack_thing();\n}\n' >"$tmp/calls/src/util/u.c"
	printf 'int pw_pack_thing(void)\n{\n\treturn 1;\n}\n' >"$tmp/calls/src/pack/p.c"
	"$cc" -c "$tmp/calls/src/util/u.c" -o "$tmp/calls/obj/src/util/u.c.o" &&
		"$cc" -c "$tmp/calls/src/pack/p.c" -o "$tmp/calls/obj/src/pack/p.c.o" || exit 1
	"$py" "$here/lint.py" --objects "$tmp/calls/obj" "$tmp/calls" >"$tmp/out3" 2>&1
	if [ $? -ne 1 ] || ! grep -q 'src/util/u.c: util layer calls up into pack: pw_pack_thing \[call:src/pack\]' "$tmp/out3"; then
		echo "FAIL: lint --objects missed a call from util into pack"
		cat "$tmp/out3"
		exit 1
	fi
fi
echo "lint self-test: ok"
