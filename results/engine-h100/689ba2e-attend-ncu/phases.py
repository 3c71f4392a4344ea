#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Nsight Compute's SASS source page (ncu -i REP --page source --csv --print-source sass, gzipped) read by
# phase: each kernel's instructions split at its PDL wait (ACQBULK) and at every BAR.SYNC after it; per
# phase the warp-state samples, the dominant stall reasons and the warp-level instructions executed over
# the grid. The first section of each kind (attend, merge) only.
#   python3 phases.py source-sass.csv.gz
import csv, gzip, sys, collections
rows = list(csv.reader(gzip.open(sys.argv[1], 'rt')))
secs = []
for i, r in enumerate(rows):
    if r and r[0] == 'Kernel Name':
        secs.append(i)
secs.append(len(rows))
want = sys.argv[2:] or ['attend', 'merge']
seen = set()
for si in range(len(secs) - 1):
    name = rows[secs[si]][1]
    kind = 'attend' if 'attend' in name else 'merge'
    if kind in seen: continue
    seen.add(kind)
    hdr = rows[secs[si] + 1]
    col = {h: j for j, h in enumerate(hdr)}
    body = rows[secs[si] + 2:secs[si + 1]]
    stalls = [h for h in hdr if h.startswith('stall_') and '(Not Issued)' not in h]
    # phases: split at ACQBULK (the PDL wait) and each BAR.SYNC after it
    phase, names = 0, ['pre-wait']
    acc = collections.defaultdict(lambda: collections.Counter())
    inst = collections.Counter()
    after = False
    for r in body:
        if len(r) < len(hdr): continue
        src = r[col['Source']].strip()
        if 'ACQBULK' in src and not after:
            after = True; phase += 1; names.append('wait->bar1')
        s = int(r[col['Warp Stall Sampling (All Samples)']] or 0)
        acc[phase]['samples'] += s
        for st in stalls:
            v = r[col[st]]
            if v and v not in ('-',):
                acc[phase][st] += int(float(v))
        inst[phase] += int(r[col['Instructions Executed']] or 0)
        if after and src.startswith('BAR.SYNC'):
            phase += 1; names.append('after bar%d' % (phase - 1))
    tot = sum(acc[p]['samples'] for p in acc)
    print('==', kind, name[:60], 'samples', tot)
    for p in sorted(acc):
        top = sorted(((acc[p][st], st) for st in stalls), reverse=True)[:5]
        print('  %-14s samples %6d (%4.1f%%)  warp-instr %7d   %s' % (names[p], acc[p]['samples'], 100.0 * acc[p]['samples'] / max(tot, 1), inst[p],
              ', '.join('%s %d' % (st[6:], v) for v, st in top if v)))
