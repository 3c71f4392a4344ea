#!/bin/sh
# SPDX-License-Identifier: MIT
# The step's timeline (engine/gpu/kernels/timeline.cuh) stays whole as kernels are added:
# timeline_kernels_test.sh SOURCE_ROOT BUILD_DIR TAP_SH.
#   1. Every kernel of engine/gpu/kernels starts with ARB_TL(tag), the tag one of timeline.h's,
#      but those that never wait (bw.cu's read, wgen.cu's generation, persist.cu's wait probe):
#      in a timeline build a kernel that waits without a scope would stamp another CTA's record.
#      Each file with one ends in ARB_TL_TU(its name), and timeline.cu's ARB_TL_FILES lists
#      exactly those files. Checked on the tree, and on a copy with one stamp removed, one setter
#      misnamed and one file left off the list, where it must fail.
#   2. With nvcc (else those lines are skipped): argmax.cu and timeline.cu compiled as a
#      -Dengine_timeline=true build compiles them (the build's own flags, sm_90 only), and the
#      kernel file defines the setter timeline.cu calls.
set -u
src=$1 build=$2
. "$3"
cat >"$tmp/lint.py" <<'PY'
import os, re, sys
d = sys.argv[1]
ALLOW = {('bw.cu', 'read_kernel'), ('persist.cu', 'persist_wait_probe_kernel')}
tags = set(re.findall(r'\b(ARB_TL_[A-Z0-9_]+)\s*[,=]', open(os.path.join(d, 'timeline.h')).read())) - {'ARB_TL_TAGS'}
listed = set(re.search(r'#define ARB_TL_FILES\(X\)(.*?)\n\s*\n', open(os.path.join(d, 'timeline.cu')).read(),
                       re.S).group(1).replace('\\', ' ').split())
listed = {x[2:-1] for x in listed if x.startswith('X(')}
bad, with_tl = [], set()
for f in sorted(os.listdir(d)):
    if not f.endswith('.cu') or f == 'timeline.cu':
        continue
    text = open(os.path.join(d, f)).read()
    for m in re.finditer(r'__global__([^{;]*?)\{\s*\n\s*([^\n]*)', text, re.S):
        name = [x for x in re.findall(r'(\w+)\s*\(', m.group(1)) if x != '__launch_bounds__'][0]
        first = m.group(2)
        if f == 'wgen.cu' or (f, name) in ALLOW:
            continue
        t = re.match(r'ARB_TL\((ARB_TL_[A-Z0-9_]+)\);', first)
        if not t:
            bad.append(f'{f}: {name} does not start with ARB_TL(tag)')
        elif t.group(1) not in tags:
            bad.append(f'{f}: {name}: {t.group(1)} is not a tag of timeline.h')
        else:
            with_tl.add(f[:-3])
    if f[:-3] in with_tl and not re.search(r'^ARB_TL_TU\(' + re.escape(f[:-3]) + r'\)\s*$', text, re.M):
        bad.append(f'{f}: no ARB_TL_TU({f[:-3]})')
for x in sorted(with_tl - listed):
    bad.append(f'timeline.cu: ARB_TL_FILES lacks {x}')
for x in sorted(listed - with_tl):
    bad.append(f'timeline.cu: ARB_TL_FILES lists {x}, which has no stamped kernel')
print('\n'.join(bad) if bad else f'{len(with_tl)} files stamped, every kernel that may wait')
sys.exit(1 if bad else 0)
PY
k="$src/engine/gpu/kernels"
if python3 "$tmp/lint.py" "$k" >"$tmp/lint.out" 2>&1; then
    tap OK "the tree: $(cat "$tmp/lint.out")"
else
    sed 's/^/# /' "$tmp/lint.out"
    tap FAIL "the tree's kernels and timeline.cu do not match"
fi
mkdir -p "$tmp/k"
cp "$k"/*.cu "$k"/*.h "$tmp/k/"
sed -i '0,/    ARB_TL(ARB_TL_DOWN);/{/    ARB_TL(ARB_TL_DOWN);/d}' "$tmp/k/moe.cu"
sed -i 's/^ARB_TL_TU(router)$/ARB_TL_TU(routr)/' "$tmp/k/router.cu"
sed -i 's/ X(embed)//' "$tmp/k/timeline.cu"
python3 "$tmp/lint.py" "$tmp/k" >"$tmp/lint.out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/lint.out"
if [ $rc -eq 1 ] && grep -q "moe.cu: moe_down_kernel does not start with ARB_TL" "$tmp/lint.out" &&
    grep -q "router.cu: no ARB_TL_TU(router)" "$tmp/lint.out" && grep -q "ARB_TL_FILES lacks embed" "$tmp/lint.out"; then
    tap OK "a copy with a stamp removed, a setter misnamed and a file left off the list: each found"
else
    tap FAIL "the broken copy: exit $rc"
fi
if ! command -v nvcc >/dev/null 2>&1 || [ ! -f "$build/compile_commands.json" ]; then
    echo "# no nvcc or no compile_commands.json: the timeline build's compile not checked"
else
    ok=1 skip=0
    for f in argmax timeline; do
        cmd=$(python3 - "$build/compile_commands.json" "$f" "$tmp/$f.o" <<'PY'
import json, re, sys, shlex
e = [x for x in json.load(open(sys.argv[1])) if x['file'].endswith('engine/gpu/kernels/' + sys.argv[2] + '.cu')]
if not e:
    sys.exit(3) # a build without the GPU engine
e = e[0]
c = re.sub(r'(-gencode \S+ )+', '-gencode arch=compute_90,code=sm_90 ', e['command'] + ' ')
c = re.sub(r' -o \S+', ' -o ' + shlex.quote(sys.argv[3]), c)
print('cd ' + shlex.quote(e['directory']) + ' && ' + c + ' -DARB_TIMELINE=1')
PY
)
        [ -n "$cmd" ] || { skip=1; break; }
        sh -c "$cmd" >"$tmp/$f.log" 2>&1 || { ok=0; sed 's/^/# /' "$tmp/$f.log" | tail -20; }
    done
    if [ $skip = 1 ]; then
        echo "# this build compiles no engine kernels: the timeline build's compile not checked"
    elif [ $ok = 1 ] && nm -C "$tmp/argmax.o" | grep -q " T arbk::tl_attach_argmax" &&
        nm -C "$tmp/timeline.o" | grep -q " U arbk::tl_attach_argmax"; then
        tap OK "argmax.cu and timeline.cu compile with ARB_TIMELINE=1; argmax.o defines the setter timeline.o calls"
    else
        tap FAIL "the timeline build's compile or its setter's symbol"
    fi
fi
echo "1..$n"
exit $bad
