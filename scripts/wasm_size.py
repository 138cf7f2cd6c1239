#!/usr/bin/env python3
"""Where the bytes of a wasm module go, by crate/module and by function (scripts/size.sh runs it).

Reads one wasm file that still has its `name` section (wasm-opt -g keeps it), sums each function
body's size under its demangled name, and prints: sections, totals per crate (or per module of
`memoire` with --depth 2), the largest functions, and the data section's largest strings.
A dependency-free stand-in for twiggy: only the standard library, so it runs wherever Python 3 does.
"""
import re
import subprocess
import sys
from collections import Counter

# --areas: what each part of the app costs, by function name (the first pattern that matches wins).
# The first screen needs the ui, the session's open/list/turn paths and the store; the rest is only
# run after a user's action (import, sync, a memory update, a backup) and could load later.
AREAS = [
    ("import (readers, zip, checks, plan, write)",
     r"engine::import|import_file|write_import|existing_ids_for|session::import|ui::backup|miniz_oxide"
     r"|engine::backup::(check|plan)|CheckedImport"),
    ("backup export", r"engine::backup|session::backup|export_json|export_markdown"),
    ("sync (replication, documents, tabs channel)", r"replicate|engine::sync|session::sync|ui::sync|sync_docs"),
    ("memory (update, parse, merge, graph)", r"session::memory|engine::memory|ui::memory|engine::summary"),
    ("markdown", r"engine::markdown|ui::messages"),
    ("ui (other)", r"memoire::ui|memoire::main"),
    ("session (other)", r"memoire::session"),
    ("store (other)", r"memoire::store"),
    ("engine (other)", r"memoire::engine"),
    ("transport", r"memoire::transport"),
    ("leptos (tachys, reactive_graph, leptos)", r"tachys|leptos|reactive_graph|any_spawner|oco_ref"),
    ("serde, serde_json", r"serde"),
    ("std (core, alloc, hashbrown, fmt, sort)", r"^<*&?(mut )?(core|alloc|std|hashbrown|indexmap|dlmalloc|compiler_builtins)"),
    ("wasm-bindgen, js-sys, web-sys", r"wasm_bindgen|js_sys|web_sys"),
]


def brotli_size(blob):
    """brotli -q 11 of a byte string (the `brotli` command; -1 when it is missing)."""
    try:
        return len(subprocess.run(["brotli", "-c", "-q", "11"], input=blob, capture_output=True, check=True).stdout)
    except (OSError, subprocess.CalledProcessError):
        return -1


def print_areas(funcs, data):
    """Raw bytes and brotli of each area's function bodies compressed on their own (an estimate of
    what the area adds to the shipped file), then the data section."""
    groups = {}
    for body, name in funcs:
        area = next((a for a, pat in AREAS if re.search(pat, name)), "other")
        groups.setdefault(area, []).append(body)
    print("\nby area (raw function bodies; brotli of the area's bodies on their own):")
    rows = sorted(((sum(map(len, b)), brotli_size(b"".join(b)), a) for a, b in groups.items()), reverse=True)
    for raw, br, area in rows:
        print("  %8d  brotli %7d  %s" % (raw, br, area))
    print("  %8d  brotli %7d  data section" % (len(data), brotli_size(data)))


def leb(b, i):
    r = s = 0
    while True:
        x = b[i]
        i += 1
        r |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return r, i


def sections(b):
    i = 8
    while i < len(b):
        sid = b[i]
        size, j = leb(b, i + 1)
        yield sid, b[j : j + size]
        i = j + size


def name_of(payload):
    n, i = leb(payload, 0)
    return payload[i : i + n].decode(), payload[i + n :]


def function_names(payload):
    names = {}
    i = 0
    while i < len(payload):
        kind = payload[i]
        size, j = leb(payload, i + 1)
        if kind == 1:
            count, k = leb(payload, j)
            for _ in range(count):
                idx, k = leb(payload, k)
                ln, k = leb(payload, k)
                names[idx] = payload[k : k + ln].decode("utf-8", "replace")
                k += ln
        i = j + size
    return names


def count_imported_functions(payload):
    count, i = leb(payload, 0)
    funcs = 0
    for _ in range(count):
        for _ in range(2):
            ln, i = leb(payload, i)
            i += ln
        kind = payload[i]
        i += 1
        if kind == 0:
            _, i = leb(payload, i)
            funcs += 1
        elif kind == 1:
            i += 1
            flags, i = leb(payload, i)
            _, i = leb(payload, i)
            if flags & 1:
                _, i = leb(payload, i)
        elif kind == 2:
            flags, i = leb(payload, i)
            _, i = leb(payload, i)
            if flags & 1:
                _, i = leb(payload, i)
        elif kind == 3:
            i += 2
        else:
            raise ValueError("unknown import kind %d" % kind)
    return funcs


def demangle_legacy(sym):
    """_ZN4core3fmt5write17h..E -> core::fmt::write (Rust legacy mangling, hash dropped)."""
    if not sym.startswith("_ZN"):
        return sym
    i, parts = 3, []
    while i < len(sym) and sym[i] != "E":
        m = re.match(r"\d+", sym[i:])
        if not m:
            return sym
        n = int(m.group())
        i += len(m.group())
        parts.append(sym[i : i + n])
        i += n
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    out = "::".join(parts)
    for a, b in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$RF$", "&"), ("$BP$", "*"),
                 ("$C$", ","), ("$u7b$", "{"), ("$u7d$", "}"), ("$u5b$", "["), ("$u5d$", "]"),
                 ("$u27$", "'"), ("$u22$", '"'), ("$u3b$", ";"), ("$u2b$", "+"), ("..", "::")):
        out = out.replace(a, b)
    return out


def owner(name, depth):
    """The crate (depth 1) or crate::module (depth 2, for memoire) a function belongs to.
    For `<A as B>::f` the implementing type's crate counts; generic parameters are skipped."""
    n = name
    if n.startswith("<"):
        n = n[1:]
        if n.startswith("&"):
            n = n.lstrip("&").removeprefix("mut ")
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(::([A-Za-z_][A-Za-z0-9_]*))?", n)
    if not m:
        return "(other)"
    crate = m.group(1)
    if crate in ("dyn",):
        return owner(n[4:], depth)
    if depth >= 2 and crate == "memoire" and m.group(3):
        return "memoire::" + m.group(3)
    return crate


def main():
    args = sys.argv[1:]
    depth = 2 if "--depth2" in args else 1
    top = 40
    args = [a for a in args if not a.startswith("--")]
    b = open(args[0], "rb").read()
    secs = list(sections(b))
    imported = 0
    names = {}
    bodies = []
    data_segments = []
    total = len(b)
    print("file %s: %d bytes" % (args[0], total))
    for sid, p in secs:
        label = {0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory",
                 6: "global", 7: "export", 8: "start", 9: "elem", 10: "code", 11: "data",
                 12: "datacount"}.get(sid, str(sid))
        if sid == 0:
            cname, rest = name_of(p)
            label += ":" + cname
            if cname == "name":
                names = function_names(rest)
        elif sid == 2:
            imported = count_imported_functions(p)
        elif sid == 10:
            count, i = leb(p, 0)
            for _ in range(count):
                size, j = leb(p, i)
                bodies.append(p[i : j + size])
                i = j + size
        elif sid == 11:
            count, i = leb(p, 0)
            for _ in range(count):
                flags, i = leb(p, i)
                if flags == 0:
                    while p[i] != 0x0B:
                        i += 1
                    i += 1
                elif flags == 2:
                    _, i = leb(p, i)
                    while p[i] != 0x0B:
                        i += 1
                    i += 1
                size, i = leb(p, i)
                data_segments.append(p[i : i + size])
                i += size
        print("  section %-28s %9d" % (label, len(p)))
    funcs = []
    for k, body in enumerate(bodies):
        raw = names.get(imported + k, "func%d" % (imported + k))
        funcs.append((len(body), demangle_legacy(raw)))
    code = sum(s for s, _ in funcs)
    by_owner = Counter()
    for s, n in funcs:
        by_owner[owner(n, depth)] += s
    print("\ncode: %d bytes in %d functions; by owner:" % (code, len(funcs)))
    for o, s in by_owner.most_common(top):
        print("  %8d %5.1f%%  %s" % (s, 100.0 * s / code, o))
    print("\nlargest functions:")
    for s, n in sorted(funcs, reverse=True)[:top]:
        print("  %8d  %s" % (s, n[:150]))
    data = b"".join(data_segments)
    print("\ndata: %d bytes in %d segments; longest printable runs:" % (len(data), len(data_segments)))
    runs = sorted(re.findall(rb"[\x20-\x7e\n\t]{40,}", data), key=len, reverse=True)[:15]
    for r in runs:
        print("  %6d  %s" % (len(r), r[:110].decode("ascii", "replace").replace("\n", "\\n")))
    zeros = data.count(0)
    print("  (zero bytes: %d)" % zeros)
    if "--areas" in sys.argv:
        print_areas([(body, n) for body, (_, n) in zip(bodies, funcs)], data)


if __name__ == "__main__":
    main()
