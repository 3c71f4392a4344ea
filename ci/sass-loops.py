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
#   --sb: also each loop's scoreboards, from the control bits of each instruction's second word
# (cuobjdump prints it on the line after the instruction; the Volta-and-later layout: stall
# cycles bits 105-108, write barrier 110-112, read barrier 113-115, wait mask 116-121): which
# scoreboards its global and shared loads set, which of its instructions wait on the ones its
# global loads set, and its counted waits (DEPBAR, cp.async.wait_group; cp.async itself, LDGSTS,
# is not counted as a load there). A loop whose loads all set one scoreboard and that waits on it
# waits for every load in flight at that point, whatever the source's order (the thirty-sixth
# session's rolling loads, results/engine-h100/100aa83-roll/: ptxas put all 35 on one). Where a
# loop touches local memory (spills), also its STL and LDL and how many of its STL wait on a global
# load's scoreboard: a value spilled as it arrives, so the loads after it issue a round trip later
# (the sm_120 down of results/kernel-resources/sm120-down-unr6.txt).
#   --prewait: also the global loads reachable from the kernel's entry before a PDL wait, walking
# its branches (an unpredicated BRA goes to its target only, a predicated one to both; EXIT and RET
# end a path, ACQBULK stops it): LDG, LDGSTS (cp.async), bulk copies (UBLKCP, UTMALDG) and L2
# prefetches (CCTL.E.PF*), and where the waits are. Counting by address order alone misleads: a
# branch's wait laid out first (gemv's `row >= N` path, gate/up's routed tiles) is not the wait the
# loads precede. Read it against the PTX's loads before `griddepcontrol.wait` (ci/pdl-loads.py's
# compile): ptxas may hoist the wait above loads the source issues first (thirty-eighth session: the
# embedding's norm weights, harmless there) and a kernel that counts on those loads would lose them.
# cuobjdump and nvdisasm (which it calls) come from PyPI's nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm wheels where the toolkit lacks them (docs/notes.md, thirty-second session).
# Exit 2 with a message naming the input on a missing or unreadable file, a bad REGEX, input with no
# SASS function, or no function matching REGEX.
import argparse
import re
import signal
import sys

FUNC = re.compile(r'^\s*Function\s*:\s*(\S+)')
INSN = re.compile(r'^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;(?:\s*/\*\s*0x[0-9a-f]+\s*\*/)?\s*$')
WORD2 = re.compile(r'^\s*/\*\s*(0x[0-9a-f]+)\s*\*/\s*$')
BRA = re.compile(r'(?:^|\s)BRA(?:\.[A-Z.]+)?\s+(0x[0-9a-f]+)')


def die(msg):
    print('ci/sass-loops.py: ' + msg, file=sys.stderr)
    sys.exit(2)


def parse(text):
    """[(name, [(address, text, second word or None)])]"""
    funcs, cur = [], None
    for line in text.splitlines():
        m = FUNC.match(line)
        if m:
            cur = (m.group(1), [])
            funcs.append(cur)
            continue
        m = INSN.match(line)
        if m and cur is not None:
            cur[1].append((int(m.group(1), 16), m.group(2).strip(), None))
            continue
        m = WORD2.match(line)
        if m and cur is not None and cur[1] and cur[1][-1][2] is None:
            a, t, _ = cur[1][-1]
            cur[1][-1] = (a, t, int(m.group(1), 16))
    return funcs


def opname(t):
    return t.split()[1] if t.startswith('@') and len(t.split()) > 1 else t.split()[0]


def control(word2):
    """(write barrier or None, wait mask) of an instruction's second word"""
    ctl = word2 >> 41
    wb = (ctl >> 5) & 7
    return (None if wb == 7 else wb), (ctl >> 11) & 0x3f


def scoreboards(body):
    if any(i[2] is None for i in body):
        return 'scoreboards: not in the input (each instruction\'s second word, on the line after it)'
    sets = {}  # 'LDG' / 'LDS' -> {sb: count}; cp.async (LDGSTS) and its LDGDEPBAR are not loads here
    depbar = 0  # counted waits (DEPBAR.LE SBn, k: cp.async.wait_group)
    ctl = [(a, opname(t).split('.')[0]) + control(w) for a, t, w in body]  # (address, op, write sb, wait mask)
    for _, base, wb, _ in ctl:
        kind = 'LDG' if base == 'LDG' else 'LDS' if base in ('LDS', 'LDSM') else None
        depbar += base == 'DEPBAR'
        if kind and wb is not None:
            sets.setdefault(kind, {}).setdefault(wb, 0)
            sets[kind][wb] += 1
    tail = '; counted waits (DEPBAR): %d' % depbar if depbar else ''
    g = set(sets.get('LDG', {}))
    # local memory (spills): its stores, loads, and the stores that wait on a global load's
    # scoreboard (a value spilled as it arrives: the loads after it issue only once it is in)
    stl = [(a, mask) for a, base, _, mask in ctl if base == 'STL']
    ldl = sum(1 for _, base, _, _ in ctl if base == 'LDL')
    if stl or ldl:
        tail += '; local memory: STL %d LDL %d, %d STL waiting on a global load\'s scoreboard' % (
            len(stl), ldl, sum(1 for _, mask in stl if any(mask >> b & 1 for b in g)))
    if not sets:
        return 'scoreboards: no load sets one' + tail
    parts = ['%s %s' % (k, ' '.join('SB%d x%d' % (b, n) for b, n in sorted(sets[k].items())))
             for k in ('LDG', 'LDS') if k in sets]
    waits = []  # (address, the global loads' scoreboards it waits on)
    for a, _, _, mask in ctl:
        on = [b for b in sorted(g) if mask >> b & 1]
        if on:
            waits.append((a, on))
    s = 'scoreboards: loads set %s; waits on a global load\'s: %d' % ('; '.join(parts), len(waits))
    if waits:
        shown = ', '.join('%04x SB%s' % (a, ','.join(map(str, b))) for a, b in waits[:4])
        s += ' (%s%s)' % (shown, ', ..' if len(waits) > 4 else '')
    return s + tail


TARGET = re.compile(r'0x([0-9a-f]+)$')  # a branch's target: its last operand


def load_kind(op):
    """'load', 'prefetch' or None for an instruction's opcode with modifiers"""
    base = op.split('.')[0]
    if base in ('LDG', 'LDGSTS', 'UBLKCP', 'UTMALDG'):
        return 'load'
    if base == 'UBLKPF' or (base == 'CCTL' and '.PF' in op):
        return 'prefetch'
    return None


def prewait(insns):
    """The global loads and L2 prefetches on some path from the entry before a PDL wait, and the waits"""
    waits = [a for a, t, _ in insns if opname(t) == 'ACQBULK']
    if not waits:
        return 'before the PDL wait: no PDL wait (ACQBULK) in it'
    at = {a: k for k, (a, _, _) in enumerate(insns)}
    seen, stack, indirect = set(), [0], 0
    while stack:
        k = stack.pop()
        if k in seen or k >= len(insns):
            continue
        seen.add(k)
        t = insns[k][1]
        op = opname(t)
        base = op.split('.')[0]
        if base == 'ACQBULK':
            continue
        if base == 'BRA':
            m = TARGET.search(t)
            if m and int(m.group(1), 16) in at:
                stack.append(at[int(m.group(1), 16)])
            else:
                indirect += 1
        elif base in ('BRX', 'JMX', 'JMP'):
            indirect += 1  # their targets are not read here
        ends = base in ('EXIT', 'RET', 'BRA', 'BRX', 'JMX', 'JMP')
        if not ends or t.startswith('@') or op.startswith('BRA.DIV'):  # BRA.DIV: taken only where the warp diverged
            stack.append(k + 1)
    ops = [opname(insns[k][1]) for k in seen]
    loads = [op.split('.')[0] for op in ops if load_kind(op) == 'load']
    n_pf = sum(1 for op in ops if load_kind(op) == 'prefetch')
    s = 'before the PDL wait: '
    if loads:
        s += '%d global loads (LDG %d, LDGSTS %d, bulk %d)' % (
            len(loads), loads.count('LDG'), loads.count('LDGSTS'), len(loads) - loads.count('LDG') - loads.count('LDGSTS'))
    else:
        s += 'no global load'
    s += ', %d L2 prefetches' % n_pf if n_pf else ''
    s += ' reachable from the entry; waits at %s' % ' '.join('%04x' % w for w in waits)
    if indirect:
        s += '; %d branches not followed (no target read)' % indirect
    return s


def counts(body):
    op = lambda i: opname(i[1])
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


def report(name, insns, sb=False, pre=False):
    print('%s: %d instructions' % (name, len(insns)))
    if pre:
        print('  ' + prewait(insns))
    # phases: before the wait, then between the barriers after it
    cut, seen_wait = [], False
    for k, (_, t, _) in enumerate(insns):
        if not seen_wait and t.startswith('ACQBULK'):
            cut.append((k, 'the PDL wait'))
            seen_wait = True
        elif seen_wait and 'BAR.SYNC' in t:
            cut.append((k + 1, 'a barrier'))
    start, label = 0, 'start'
    for k, what in cut + [(len(insns), 'end')]:
        print('  phase %-12s -> %-12s %s' % (label, what, fmt(counts(insns[start:k]))))
        start, label = k, what
    for a, t, _ in insns:
        m = BRA.search(t)
        if not m:
            continue
        tgt = int(m.group(1), 16)
        if tgt >= a:
            continue
        body = [i for i in insns if tgt <= i[0] <= a]
        print('  loop %04x-%04x %s' % (tgt, a, fmt(counts(body))))
        if sb:
            print('    ' + scoreboards(body))


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a reader that stops early (head) ends it quietly
    ap = argparse.ArgumentParser(description='instructions, phases and loops of cuobjdump -sass text')
    ap.add_argument('--kernel', default='', help='regex on the mangled function name')
    ap.add_argument('--sb', action='store_true', help="each loop's load scoreboards and the waits on them")
    ap.add_argument('--prewait', action='store_true',
                    help='the global loads reachable from the entry before a PDL wait, following branches')
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
        report(name, insns, a.sb, a.prewait)


if __name__ == '__main__':
    main()
