# SPDX-License-Identifier: MIT
"""Layering check: every #include "..." of every C/CUDA file, resolved to a file, must name a
folder the including folder may include (ci/layering.rules), and the module graph (a .c/.cu
and its .h/.cuh of the same stem are one module) must have no circle. And a file that names a
<stdint.h> type (uint32_t, int64_t, uintptr_t, ...) must include <stdint.h> (or <cstdint>,
<inttypes.h>, <cinttypes>) itself or through a header of the tree: a system header that brings
it in today may not tomorrow (gcc 13's libstdc++ stopped, and a device build failed so).

Usage: python3 ci/layering.py [ROOT [RULES]]   (ROOT: the source root, default the checkout;
RULES: default ROOT/ci/layering.rules). Exit 0 clean, 1 on a violation, 2 on bad rules.
"""
import os
import re
import sys

SOURCE_EXT = ('.c', '.h', '.cu', '.cuh')
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SYS_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*<([^>]+)>')
STDINT_HEADERS = ('stdint.h', 'cstdint', 'inttypes.h', 'cinttypes')
STDINT_NAME_RE = re.compile(r'\b(u?int(?:8|16|32|64)_t|u?intptr_t|u?intmax_t)\b')
COMMENT_RE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def code_lines(text):
    """The text with comments and string literals blanked, lines kept."""
    return COMMENT_RE.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text).split('\n')


class Rules:
    def __init__(self):
        self.scan = []        # folders whose files are checked
        self.roots = []       # include roots searched after the including file's folder
        self.generated = []   # headers made by the build (not in the tree): allowed anywhere
        self.everyone = []    # folders every folder may include
        self.allow = {}       # folder -> folders it may include besides itself
        self.search = {}      # folder -> more include roots (a target's include_directories)
        self.module = {}      # stem -> the stem of the module it belongs to


def fail_rules(path, lineno, msg):
    print(f'{path}:{lineno}: {msg}', file=sys.stderr)
    sys.exit(2)


def read_rules(path):
    rules = Rules()
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            words = line.split('#', 1)[0].split()
            if not words:
                continue
            key, args = words[0], words[1:]
            if key in ('scan', 'roots', 'generated', 'everyone'):
                getattr(rules, key).extend(a.rstrip('/') for a in args)
            elif key == 'module':
                if len(args) < 2:
                    fail_rules(path, lineno, '"module" needs two stems or more (expected: '
                               'module FOLDER/STEM FOLDER/STEM...)')
                for a in args[1:]:
                    if os.path.dirname(a) != os.path.dirname(args[0]):
                        fail_rules(path, lineno, f'module {args[0]}: {a} is in another folder '
                                   '(a module lives in one folder)')
                    rules.module[a] = args[0]
            elif key in ('allow', 'search'):
                if not args:
                    fail_rules(path, lineno, f'"{key}" needs a folder (expected: {key} FOLDER DIR...)')
                table = getattr(rules, key)
                folder = args[0].rstrip('/')
                if folder in table:
                    fail_rules(path, lineno, f'{key} {folder} given twice')
                table[folder] = [a.rstrip('/') for a in args[1:]]
            else:
                fail_rules(path, lineno, f'unknown keyword "{key}" (expected scan, roots, '
                           'generated, everyone, allow, search or module)')
    return rules


def under(path, folder):
    return path == folder or path.startswith(folder + '/')


def source_files(root, rules):
    for top in rules.scan:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def resolve(root, rules, src_dir, inc):
    """The tree-relative file an include names, or None."""
    candidates = [os.path.join(src_dir, inc)]
    candidates += [os.path.join(d, inc) for d in rules.roots]
    candidates += [os.path.join(d, inc) for d in rules.search.get(src_dir, [])]
    for c in candidates:
        c = os.path.normpath(c)
        if not c.startswith('..') and os.path.isfile(os.path.join(root, c)):
            return c
    return None


def module_of(rules, path):
    stem = os.path.splitext(path)[0]
    return rules.module.get(stem, stem)


def find_cycles(edges):
    """Strongly connected components of more than one module (Tarjan), each as a cycle path."""
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def strongconnect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(set(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strongconnect(v)

    cycles = []
    for scc in sccs:
        start = min(scc)
        # Shortest way back to start inside the component (breadth first).
        prev, frontier, found = {start: None}, [start], None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in sorted(edges.get(v, {})):
                    if w not in scc:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        path = [found]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        path.reverse()
        cycles.append((path, scc))
    return cycles


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    root = argv[1] if len(argv) > 1 else os.path.dirname(here)
    rules_path = argv[2] if len(argv) > 2 else os.path.join(root, 'ci', 'layering.rules')
    rules = read_rules(rules_path)
    rel = os.path.relpath(rules_path, root)
    rules_name = rules_path if rel.startswith('..') else rel  # as messages name it
    errors = []
    edges = {}   # module -> {module: "file:line"}
    nfiles = ninc = 0
    seen_dirs, seen_files = set(), []
    stdint_direct, project_incs, stdint_use = set(), {}, {}
    for path in source_files(root, rules):
        nfiles += 1
        src_dir = os.path.dirname(path)
        seen_dirs.add(src_dir)
        seen_files.append(path)
        allowed = rules.allow.get(src_dir)
        if allowed is None:
            errors.append(f'{path}: folder {src_dir} has no "allow {src_dir} ..." line in '
                          f'{rules_name}')
            allowed = []
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            text = f.read()
        for lineno, line in enumerate(code_lines(text), 1):
            u = STDINT_NAME_RE.search(line)
            if u and path not in stdint_use:
                stdint_use[path] = (lineno, u.group(1))
        project_incs[path] = []
        for lineno, line in enumerate(text.split('\n'), 1):
            sm = SYS_INCLUDE_RE.match(line)
            if sm and sm.group(1) in STDINT_HEADERS:
                stdint_direct.add(path)
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            ninc += 1
            inc = m.group(1)
            where = f'{path}:{lineno}'
            if inc in rules.generated:
                continue
            target = resolve(root, rules, src_dir, inc)
            if target is None:
                searched = [src_dir] + rules.roots + rules.search.get(src_dir, [])
                errors.append(f'{where}: #include "{inc}" names no file (searched '
                              f'{" ".join(searched)})')
                continue
            tdir = os.path.dirname(target)
            ok = tdir == src_dir or any(under(tdir, d) for d in allowed + rules.everyone)
            if not ok:
                errors.append(f'{where}: #include "{inc}" ({target}) is not allowed: '
                              f'{src_dir} may include {" ".join(allowed) or "only itself"}'
                              f' (allow {src_dir} in {rules_name})')
            project_incs[path].append(target)
            a, b = module_of(rules, path), module_of(rules, target)
            if a != b:
                edges.setdefault(a, {}).setdefault(b, where)
    # The files that have <stdint.h>: those that include it, then, until nothing changes, those
    # that include one of them (a fixed point: include circles need no special case).
    provides = set(stdint_direct)
    grew = True
    while grew:
        grew = False
        for path, incs in project_incs.items():
            if path not in provides and any(q in provides for q in incs):
                provides.add(path)
                grew = True
    for path in sorted(stdint_use):
        if path not in provides:
            lineno, name = stdint_use[path]
            errors.append(f'{path}:{lineno}: uses {name} but includes no <stdint.h>, <cstdint>, '
                          '<inttypes.h> or <cinttypes>, itself or through a header of the tree '
                          '(another header may stop bringing it in: include it)')
    for folder in sorted(set(rules.allow) | set(rules.search)):
        if folder not in seen_dirs:
            errors.append(f'{rules_name}: a rule for {folder}, which holds no source file (a stale '
                          'rule: remove it, or fix the folder name)')
    stems = {os.path.splitext(p)[0] for p in seen_files}
    for stem in sorted(set(rules.module) | set(rules.module.values())):
        if stem not in stems:
            errors.append(f'{rules_name}: module rule names {stem}, which is no source file\'s '
                          'stem (a stale rule)')
    for path, scc in find_cycles(edges):
        steps = [f'{path[i]} -> {path[(i + 1) % len(path)]} '
                 f'({edges[path[i]][path[(i + 1) % len(path)]]})' for i in range(len(path))]
        extra = sorted(scc - set(path))
        msg = 'circle between modules: ' + ', '.join(steps)
        if extra:
            msg += f'; the same circle also holds {" ".join(extra)}'
        errors.append(msg)
    for e in errors:
        print(f'layering: {e}', file=sys.stderr)
    if errors:
        print(f'layering: FAIL: {len(errors)} problem(s) in {nfiles} files', file=sys.stderr)
        return 1
    print(f'layering: ok: {nfiles} files, {ninc} includes, no upward include, no circle, '
          'every <stdint.h> name included')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
