#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The router's top-k block in a timeline's raw CTA records (ci/engine-timeline.sh's NAME-T1.csv.gz,
# -T3.csv.gz): per router launch, the block whose wait stamp is the latest (its second, after the
# ticket) is the top-k block; prints medians and p10/p90 over the launches of its run after the
# ticket (end - wait), its lag after the other blocks' last end, the other blocks' run, and the
# other blocks' first wait to last end (all on the global timer, us). Written for this folder's call.
import csv, gzip, sys, statistics as st
# per router launch: the top-k block = the CTA whose wait stamp is latest (its second wait, after the ticket)
for path in sys.argv[1:]:
    rows=[r for r in csv.DictReader(gzip.open(path,'rt')) if r['tag']=='router']
    by={}
    for r in rows: by.setdefault(int(r['launch']),[]).append(r)
    runs=[];lag=[];others=[];ends=[]
    for l,rs in sorted(by.items()):
        top=max(rs,key=lambda r:int(r['gw']))
        rest=[r for r in rs if r is not top]
        # on one SM's clock: run in ns via the global timer (32 ns steps) and via cycles
        runs.append((int(top['g1'])-int(top['gw']))/1000)
        lag.append((int(top['gw'])-max(int(r['g1']) for r in rest))/1000)
        others.append(st.median((int(r['g1'])-int(r['gw']))/1000 for r in rest))
        ends.append((max(int(r['g1']) for r in rest)-min(int(r['gw']) for r in rest))/1000)
    q=lambda v:"med %.2f p10 %.2f p90 %.2f"%(st.median(v),sorted(v)[len(v)//10],sorted(v)[9*len(v)//10])
    print(path,len(by),"launches")
    print("  top-k run after ticket (global timer):",q(runs))
    print("  ticket lag after the other blocks' last end:",q(lag))
    print("  other blocks' run (median per launch):",q(others))
    print("  other blocks: first wait to last end:",q(ends))
