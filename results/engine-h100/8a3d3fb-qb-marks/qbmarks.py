#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The fused q_b's CTAs in timelines recorded with ARB_TL_MARK=k (the wait's stamp taken at mla_qb.cu's
# mark k instead: 1 the prep done, 2 the q rows stored, 3 a nope CTA's absorption part stored, 4 the
# head's last CTA past its ticket, 5 the prep's first barrier passed, 6 thread 0's cp.async copies
# landed (before that barrier); 0 the PDL wait's return): per file, the end minus the stamp (us,
# global timer) of the nope CTAs (not the head's last), the RoPE CTAs and each head's last CTA (the
# nope CTA that ends last), medians and p10/p90 over the layers 3 .. 59 of the step. Reads NAME-T*.csv.gz.
import csv, gzip, sys, statistics as st
def q(v):
    v = sorted(v)
    return "med %5.2f p10 %5.2f p90 %5.2f n %d" % (st.median(v), v[len(v) // 10], v[9 * len(v) // 10], len(v))
for path in sys.argv[1:]:
    rows = [r for r in csv.DictReader(gzip.open(path, 'rt')) if r['tag'] == 'qb_absorb']
    by = {}
    for r in rows:
        by.setdefault(int(r['launch']), []).append(r)
    launches = sorted(by)[3:-1]  # as ci/timeline.py's layers 3 .. 59: not the first layers nor the last
    nope, rope, last, body, pre = [], [], [], [], []
    for l in launches:
        rs = by[l]
        heads = {}
        for r in rs:
            b = int(r['block'])
            if not r['gw']:
                continue
            d = (int(r['g1']) - int(r['gw'])) / 1000
            pre.append((int(r['gw']) - int(r['g0'])) / 1000)
            if b % 12 < 8:
                heads.setdefault(b // 12, []).append((int(r['g1']), d))
            else:
                rope.append(d)
        for h, v in heads.items():
            v.sort()
            last.append(v[-1][1])
            nope.extend(d for _, d in v[:-1])
        body.append((max(int(r['g1']) for r in rs) - min(int(r['gw']) for r in rs if r['gw'])) / 1000)
    print(path, len(launches), "launches")
    print("  nope (not last): end - stamp", q(nope))
    print("  rope:            end - stamp", q(rope))
    print("  head's last:     end - stamp", q(last))
    print("  start to stamp:             ", q(pre))
    print("  launch: first stamp to last end", q(body))
