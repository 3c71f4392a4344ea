#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# What a kernel's SASS issues, read from `cuobjdump -sass` text (issue 22: count a phase's
# instructions before building a change to it; results/engine-h100/689ba2e-attend-ncu/ found the
# attention's phases instruction-bound):
#   ci/sass-loops.py [--kernel REGEX] FILE|-
# For each function whose mangled name matches REGEX (default: every one): its instruction count;
# its phases, split at the PDL wait (ACQBULK, griddepcontrol.wait) and at each BAR.SYNC after it,
# with their static instruction counts; and every loop (a branch back to an earlier address), with
# its instructions, shared and global loads and stores, mma (HMMA), MUFU and barriers, and the
# instructions per mma.sync k16 group pair (two HMMA) where it has HMMA. Static counts: a loop's
# body runs once per iteration, the phases' straight code once.
# cuobjdump and nvdisasm (which it calls) come from PyPI's nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm wheels where the toolkit lacks them (docs/notes.md, thirty-second session).
# Exit 2 with a message naming the input on a missing or unreadable file, a bad REGEX, input with no
# SASS function, or no function matching REGEX.
import argparse
import re
import signal
import sys

FUNC = re.compile(r'^\s*Function\s*:\s*(\S+)')
INSN = re.compile(r'^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;')
BRA = re.compile(r'(?:^|\s)BRA(?:\.[A-Z.]+)?\s+(0x[0-9a-f]+)')


def die(msg):
    print('ci/sass-loops.py: ' + msg, file=sys.stderr)
    sys.exit(2)


def parse(text):
    funcs, cur = [], None
    for line in text.splitlines():
        m = FUNC.match(line)
        if m:
            cur = (m.group(1), [])
            funcs.append(cur)
            continue
        m = INSN.match(line)
        if m and cur is not None:
            cur[1].append((int(m.group(1), 16), m.group(2).strip()))
    return funcs


def counts(body):
    op = lambda i: i[1].split()[1] if i[1].startswith('@') else i[1].split()[0]
    c = {'insns': len(body)}
    for key, pre in (('lds', 'LDS'), ('ldg', 'LDG'), ('sts', 'STS'), ('stg', 'STG'), ('hmma', 'HMMA'),
                     ('mufu', 'MUFU'), ('bar', 'BAR')):
        c[key] = sum(1 for i in body if op(i).startswith(pre))
    return c


def fmt(c):
    s = 'insns %d  LDS %d  LDG %d  STS %d  STG %d  HMMA %d  MUFU %d  BAR %d' % (
        c['insns'], c['lds'], c['ldg'], c['sts'], c['stg'], c['hmma'], c['mufu'], c['bar'])
    if c['hmma'] >= 2:
        s += '  insns/2 HMMA %.1f' % (c['insns'] / (c['hmma'] / 2.0))
    return s


def report(name, insns):
    print('%s: %d instructions' % (name, len(insns)))
    # phases: before the wait, then between the barriers after it
    cut, seen_wait = [], False
    for k, (_, t) in enumerate(insns):
        if not seen_wait and t.startswith('ACQBULK'):
            cut.append((k, 'the PDL wait'))
            seen_wait = True
        elif seen_wait and 'BAR.SYNC' in t:
            cut.append((k + 1, 'a barrier'))
    start, label = 0, 'start'
    for k, what in cut + [(len(insns), 'end')]:
        print('  phase %-12s -> %-12s %s' % (label, what, fmt(counts(insns[start:k]))))
        start, label = k, what
    for a, t in insns:
        m = BRA.search(t)
        if not m:
            continue
        tgt = int(m.group(1), 16)
        if tgt >= a:
            continue
        body = [i for i in insns if tgt <= i[0] <= a]
        print('  loop %04x-%04x %s' % (tgt, a, fmt(counts(body))))


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a reader that stops early (head) ends it quietly
    ap = argparse.ArgumentParser(description='instructions, phases and loops of cuobjdump -sass text')
    ap.add_argument('--kernel', default='', help='regex on the mangled function name')
    ap.add_argument('file', help='cuobjdump -sass output, or - for stdin')
    a = ap.parse_args()
    try:
        rx = re.compile(a.kernel)
    except re.error as e:
        die("--kernel '%s': not a regular expression (%s)" % (a.kernel, e))
    try:
        text = sys.stdin.read() if a.file == '-' else open(a.file, encoding='utf-8', errors='replace').read()
    except OSError as e:
        die("'%s': cannot read it (%s)" % (a.file, e.strerror))
    funcs = parse(text)
    if not funcs:
        die("'%s': no SASS function in it (expected cuobjdump -sass output)" % a.file)
    picked = [f for f in funcs if rx.search(f[0])]
    if not picked:
        die("'%s': no function matches --kernel '%s' (%d functions)" % (a.file, a.kernel, len(funcs)))
    for name, insns in picked:
        report(name, insns)


if __name__ == '__main__':
    main()
