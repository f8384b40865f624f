#!/usr/bin/env python3
"""Structure lint for packwire (run by `make check` as lint/layers).

Fails when, under src/:
  - a file calls fprintf(stderr/stdout, printf, puts, perror, getenv,
    secure_getenv, isatty, exit or abort (the library never prints, never
    reads the environment or the terminal, never ends the process);
  - a file forks (fork, vfork), starts a program other than through
    util/spawn (exec*, posix_spawn*, popen, system), changes or reads the
    process-wide state that threads share (setenv, unsetenv, putenv,
    clearenv, environ, umask) or signal dispositions (signal, sigaction):
    the library runs inside servers with many threads;
  - a file includes a header of a higher layer, or of a sibling layer
    (client/server, odb/refs);
  - a file is over MAX_FILE_LINES lines, or a function's body (the lines
    between its opening and its closing brace) over MAX_FUNCTION_LINES: the
    message names file:line and the count;
and when docs/architecture.md's table of layers ("| <rank> | `<layer>` |"
rows) and RANK disagree (checked in a tree that has docs/), when a public
header (include/packwire/*.h) includes a header of a higher layer, a public header has no layer in the map below, or a file under
cli/ includes a private library header. With --objects DIR (the library's
object files) it also fails when a function of one layer calls into a higher
or sibling layer, and when DIR holds no object file at all (a wrong path
would otherwise check nothing). No C file under SOURCE_ROOT/src fails too.

Exceptions live in tests/lint/allowed.txt, one per line:
    <path> <rule> <reason...>
where rule is the name printed with the violation (e.g. getenv,
include:packwire/refs.h, call:src/refs, file-length,
function-length:pw_foo). An exception that no longer
matches anything is an error too, so the list stays honest.

Usage: lint.py [--objects DIR] [--allowed FILE] SOURCE_ROOT
"""
import os
import re
import subprocess
import sys

# Layers, lowest first. Directories of src/ and the public headers map onto
# them; a file may include (and call) its own layer and strictly lower ranks.
# compat sits above pack: it writes translated packs through the pack writer.
# cluster sits above client and server: a cluster node serves (server/) and
# copies objects to and from its peers with the client (client/).
# docs/architecture.md explains each layer; its table must match this map.
RANK = {
    "util": 0, "hash": 1, "repo": 2, "odb": 3, "refs": 3, "pack": 4, "compat": 5, "proto": 5,
    "transport": 6, "client": 7, "server": 7, "cluster": 8, "cli": 9, "umbrella": 10,
}
PUBLIC = {
    "export": "util", "error": "util", "buf": "util", "fs": "util",
    "hash": "hash", "object": "hash",
    "config": "repo", "repo": "repo",
    "refs": "refs",
    "odb": "odb", "idx": "odb", "compat": "compat", "convert": "compat",
    "pack-write": "pack", "revlist": "pack", "index-pack": "pack", "bitmap": "pack", "revision": "pack", "repack": "pack",
    "pkt": "proto", "proto": "proto",
    "transport": "transport", "helper": "transport", "dumb": "transport",
    "client": "client", "push": "client", "bundle": "client", "helper-serve": "client",
    "server": "server", "receive": "server",
    "packwire": "umbrella", "version": "util", "report": "util",
    "env": "transport", "daemon": "server", "http": "server",
    "serve": "server", "pack-cache": "server", "cluster": "cluster",
}
CALLS = [
    ("fprintf-stderr", re.compile(r"\bv?fprintf\s*\(\s*std(err|out)\b")),
    ("fputs-stderr", re.compile(r"\bfput[sc]\s*\([^;]*\bstd(err|out)\s*\)")),
    ("printf", re.compile(r"(?<![\w.>])v?printf\s*\(")),
    ("puts", re.compile(r"(?<![\w.>])(puts|putchar|perror)\s*\(")),
    ("getenv", re.compile(r"(?<![\w.>])(secure_)?getenv\s*\(")),
    ("isatty", re.compile(r"(?<![\w.>])isatty\s*\(")),
    ("exit", re.compile(r"(?<![\w.>])exit\s*\(")),
    ("abort", re.compile(r"(?<![\w.>])abort\s*\(")),
    ("fork", re.compile(r"(?<![\w.>])v?fork\s*\(")),
    ("exec", re.compile(r"(?<![\w.>])(f?exec(l|lp|le|v|vp|vpe|ve)|posix_spawnp?|popen|system)\s*\(")),
    ("setenv", re.compile(r"(?<![\w.>])(setenv|unsetenv|putenv|clearenv)\s*\(")),
    ("environ", re.compile(r"(?<![\w.>])(__)?environ\b")),
    ("umask", re.compile(r"(?<![\w.>])umask\s*\(")),
    ("signal", re.compile(r"(?<![\w.>])(signal|sigaction|sigset|bsd_signal|sysv_signal)\s*\(")),
]
# Sizes (issue 27): a file of src/ says one thing, a function does one job.
MAX_FILE_LINES = 1500
MAX_FUNCTION_LINES = 120
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def strip_comments_and_strings(text):
    """Blank out comments, string and char literals (keeping newlines)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_bodies(code):
    """(name, line of the name, body lines) of every function
    defined in code (comments and strings already blanked): a brace at file
    scope that follows a closing parenthesis opens a function body."""
    lines = code.split("\n")
    cont = False
    for i, line in enumerate(lines):  # blank preprocessor lines (and macros')
        directive = cont or line.lstrip().startswith("#")
        cont = directive and line.rstrip().endswith("\\")
        if directive:
            lines[i] = ""
    code = "\n".join(lines)
    depth, lineno, start = 0, 1, None
    for i, c in enumerate(code):
        if c == "\n":
            lineno += 1
        elif c == "{":
            if depth == 0:
                head = code[:i].rstrip()
                start = None
                if head.endswith(")"):
                    j, d = len(head) - 1, 0
                    while j >= 0:  # the parameter list's opening parenthesis
                        d += {")": 1, "(": -1}.get(head[j], 0)
                        if d == 0:
                            break
                        j -= 1
                    m = re.search(r"(\w+)\s*$", head[:max(j, 0)])
                    name_line = code.count("\n", 0, m.start()) + 1 if m else lineno
                    start = (m.group(1) if m else "?", lineno, name_line)
            depth += 1
        elif c == "}" and depth > 0:
            depth -= 1
            if depth == 0 and start:
                yield start[0], start[2], lineno - start[1] - 1
                start = None


def lint_sizes(rel, text, code):
    """Yield (path, rule, message, line) for a file or function too long."""
    n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if n > MAX_FILE_LINES:
        yield (rel, "file-length", "%d lines (at most %d: split it by responsibility)"
               % (n, MAX_FILE_LINES), n)
    for name, line, body in function_bodies(code):
        if body > MAX_FUNCTION_LINES:
            yield (rel, "function-length:" + name, "function %s has a body of %d lines (at "
                   "most %d: cut it in pieces)" % (name, body, MAX_FUNCTION_LINES), line)


def header_layer(inc):
    """Layer of an included header ("packwire/x.h" or "dir/x.h"), None when
    it is a local header of the includer's own directory."""
    if inc.startswith("packwire/"):
        name = inc[len("packwire/"):-2] if inc.endswith(".h") else inc
        return PUBLIC.get(name, "?")
    if "/" in inc:
        return inc.split("/", 1)[0]
    return None


def allowed_in(layer, target):
    if target is None or target == layer:
        return True
    if target not in RANK:
        return False
    return RANK[target] < RANK[layer]


def lint_tree(root):
    """Yield (path, rule, message) for every violation under root."""
    src = os.path.join(root, "src")
    for dirpath, _, files in sorted(os.walk(src)):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            parts = rel.split(os.sep)
            layer = parts[1] if len(parts) > 2 else "?"
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            if layer not in RANK:
                yield rel, "layer", "src/%s/ is not a known layer (add it to lint.py)" % layer
                continue
            for inc in INCLUDE.findall(text):
                t = header_layer(inc)
                if t == "?":
                    yield rel, "include:" + inc, "public header %s has no layer in lint.py" % inc
                elif not allowed_in(layer, t):
                    yield rel, "include:" + inc, "%s layer includes %s (layer %s)" % (layer, inc, t)
            code = strip_comments_and_strings(text)
            for v in lint_sizes(rel, text, code):
                yield v
            for lineno, line in enumerate(code.split("\n"), 1):
                for rule, rx in CALLS:
                    if rx.search(line):
                        yield rel, rule, "line %d calls %s" % (lineno, rule)
    inc_dir = os.path.join(root, "include", "packwire")
    for f in sorted(os.listdir(inc_dir)) if os.path.isdir(inc_dir) else []:
        if not f.endswith(".h"):
            continue
        rel = os.path.join("include", "packwire", f)
        layer = PUBLIC.get(f[:-2])
        if layer is None:
            yield rel, "layer", "public header has no layer (add it to PUBLIC in lint.py)"
            continue
        with open(os.path.join(inc_dir, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            t = header_layer(inc)
            if not inc.startswith("packwire/"):
                yield rel, "include:" + inc, "public header includes private %s" % inc
            elif t == "?" or not allowed_in(layer, t):
                yield rel, "include:" + inc, "%s header includes %s (layer %s)" % (layer, inc, t)
    cli = os.path.join(root, "cli")
    for f in sorted(os.listdir(cli)) if os.path.isdir(cli) else []:
        if not f.endswith((".c", ".h")):
            continue
        rel = os.path.join("cli", f)
        with open(os.path.join(cli, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            if "/" in inc and not inc.startswith("packwire/"):
                yield rel, "include:" + inc, "the CLI uses private header %s" % inc


DOC_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`(\w+)`\s*\|")


def lint_doc(root):
    """Yield (path, rule, message, line) where docs/architecture.md's table
    of layers and RANK disagree."""
    if not os.path.isdir(os.path.join(root, "docs")):
        return
    rel = os.path.join("docs", "architecture.md")
    try:
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        yield rel, "doc-rank", "missing: it describes the layers of RANK in lint.py", 0
        return
    seen = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        m = DOC_ROW.match(line)
        if not m:
            continue
        rank, layer = int(m.group(1)), m.group(2)
        seen[layer] = lineno
        if layer not in RANK:
            yield rel, "doc-rank", "layer %s is not in lint.py's RANK" % layer, lineno
        elif RANK[layer] != rank:
            yield (rel, "doc-rank", "layer %s has rank %d here, %d in lint.py's RANK"
                   % (layer, rank, RANK[layer]), lineno)
    for layer in sorted(set(RANK) - set(seen)):
        yield rel, "doc-rank", "layer %s of lint.py's RANK has no row in the table" % layer, 0


def count_objects(objdir):
    n = 0
    for _, _, files in os.walk(objdir):
        n += sum(1 for f in files if f.endswith(".c.o"))
    return n


def lint_objects(root, objdir):
    """Calls between layers, from the library's object files."""
    defs, undef = {}, {}
    for dirpath, _, files in os.walk(objdir):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            obj = os.path.join(dirpath, f)
            rel = os.path.relpath(obj, objdir)[:-2]  # src/x/y.c
            if not rel.startswith("src" + os.sep) or not os.path.exists(os.path.join(root, rel)):
                continue  # stale object of a removed source
            out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
            u = set()
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBRV":
                    defs[p[2]] = rel
                elif len(p) == 2 and p[0] == "U":
                    u.add(p[1])
            undef[rel] = u
    for rel in sorted(undef):
        layer = rel.split(os.sep)[1]
        bad = {}
        for sym in undef[rel]:
            d = defs.get(sym)
            if d:
                t = d.split(os.sep)[1]
                if not allowed_in(layer, t):
                    bad.setdefault(t, []).append(sym)
        for t, syms in sorted(bad.items()):
            yield rel, "call:src/" + t, "%s layer calls up into %s: %s" % (
                layer, t, " ".join(sorted(syms)))


def main(argv):
    objdir = None
    allowed_path = None
    args = argv[1:]
    while args and args[0].startswith("--"):
        if args[0] == "--objects":
            objdir = args[1]
            args = args[2:]
        elif args[0] == "--allowed":
            allowed_path = args[1]
            args = args[2:]
        else:
            sys.stderr.write("lint.py: unknown option %s\n" % args[0])
            return 2
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    root = args[0]
    if allowed_path is None:
        allowed_path = os.path.join(root, "tests", "lint", "allowed.txt")
    allowed = {}
    if os.path.exists(allowed_path):
        with open(allowed_path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                p = line.split(None, 2)
                if len(p) < 3:
                    sys.stderr.write("%s:%d: an exception needs a reason\n" % (allowed_path, n))
                    return 1
                allowed[(p[0], p[1])] = [n, 0]
    found = list(lint_tree(root)) + list(lint_doc(root))
    failed = 0
    if not any(f.endswith(".c") for _, _, fs in os.walk(os.path.join(root, "src")) for f in fs):
        print("%s: no source files under src/: is this the packwire tree?" % root)
        failed = 1
    if objdir:
        if not count_objects(objdir):
            print("%s: no object files (*.c.o) here: build the library first, or fix "
                  "the --objects path" % objdir)
            failed = 1
        found += list(lint_objects(root, objdir))
    for v in found:
        rel, rule, msg = v[:3]
        key = (rel, rule)
        if key in allowed:
            allowed[key][1] += 1
            continue
        where = "%s:%d" % (rel, v[3]) if len(v) > 3 and v[3] else rel
        print("%s: %s [%s]" % (where, msg, rule))
        failed = 1
    for (rel, rule), (n, used) in sorted(allowed.items(), key=lambda kv: kv[1][0]):
        if not used:
            print("%s:%d: stale exception '%s %s' (nothing matches it any more; delete the line)"
                  % (allowed_path, n, rel, rule))
            failed = 1
    if failed:
        print("lint: FAILED (fix the code, or add '<path> <rule> <reason>' to %s)" % allowed_path)
    else:
        print("lint: ok (%d exceptions used)" % len(allowed))
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv))
