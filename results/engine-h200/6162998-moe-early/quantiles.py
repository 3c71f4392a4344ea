# The quantiles in README.md: python3 quantiles.py tl/off-T1.csv.gz gate_up,down (each tag's launches 3 .. second-last)
import csv,gzip,sys,collections,statistics
rows=list(csv.DictReader(gzip.open(sys.argv[1],'rt')))
tags=sys.argv[2].split(',')
q=lambda a:[round(a[int(p*(len(a)-1))],2) for p in (0,.1,.5,.9,1)]
for tag in tags:
    agg=collections.defaultdict(list)
    launches=sorted(set(int(r['launch']) for r in rows if r['tag']==tag))
    for ln in launches[3:-1]:
        L=[r for r in rows if r['tag']==tag and int(r['launch'])==ln]
        g0=min(int(r['g0']) for r in L)
        agg['start'] += [(int(r['g0'])-g0)/1000 for r in L]
        agg['wait'] += [(int(r['gw'])-g0)/1000 for r in L if r['gw']]
        agg['end'] += [(int(r['g1'])-g0)/1000 for r in L]
        agg['end-wait'] += [(int(r['g1'])-int(r['gw']))/1000 for r in L if r['gw']]
    print(tag, len(launches),'launches; pooled quantiles 0/10/50/90/100 (us from the launch first start)')
    for k,v in agg.items(): print('  %-9s'%k, q(sorted(v)))
