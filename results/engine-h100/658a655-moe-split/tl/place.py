# The MoE launches' CTA placement from ci/engine-timeline.sh's raw records (PATH-T1.csv.gz ...):
#   python3 place.py ORDER PATH...   ORDER: shared-first or routed-first (how blockIdx maps: the
#   gate/up grid's first 112 blocks are the shared expert's parts in shared-first, its last 112 in
#   routed-first; Kimi-K2 at tp-shape 8, T <= 3)
# Per gate/up launch: routed tiles per SM; each routed CTA's run (end - wait return, global timer)
# by how many routed tiles its SM had; the launch's last routed end after its median wait. Per
# down launch: CTAs per SM, SMs used, the run by CTAs on the SM, the last end after the median wait.
import collections, csv, gzip, statistics as st, sys
order = sys.argv[1]
assert order in ("shared-first", "routed-first"), order
q = lambda v: "med %.2f p90 %.2f max %.2f (n %d)" % (st.median(v), sorted(v)[int(len(v) * .9)], max(v), len(v))
for path in sys.argv[2:]:
    rows = list(csv.DictReader(gzip.open(path, 'rt')))
    for tag in ("gate_up", "down"):
        by = collections.defaultdict(list)
        for r in rows:
            if r['tag'] == tag:
                by[int(r['launch'])].append(r)
        ls = sorted(by)[3:]  # past the first layers (dense) as ci/timeline.py's layers 3..
        runs = collections.defaultdict(list); hist = collections.Counter(); tail = []; used = []
        for L in ls:
            rs = by[L]; n = len(rs)
            if tag == "gate_up":
                R = n - 112
                routed = [r for r in rs if (int(r['block']) < R if order == "routed-first" else int(r['block']) >= 112)]
            else:
                routed = rs
            per = collections.Counter(r['sm'] for r in routed)
            hist.update(per.values()); hist[0] += 132 - len(per); used.append(len(per))
            for r in routed:
                runs[per[r['sm']]].append((int(r['g1']) - int(r['gw'])) / 1000)
            wmed = st.median(int(r['gw']) for r in rs)
            tail.append((max(int(r['g1']) for r in routed) - wmed) / 1000)
        what = "routed tiles" if tag == "gate_up" else "CTAs"
        print("%s %s: %d launches; %s an SM: %s (per launch %s)" % (path.split('/')[-1], tag, len(ls), what,
              ", ".join("%d: %.1f SMs" % (k, v / len(ls)) for k, v in sorted(hist.items())), "SMs used med %d" % st.median(used)))
        for k in sorted(runs):
            print("   run with %d on its SM: %s" % (k, q(runs[k])))
        print("   last %s end after the launch's median wait: %s" % ("routed" if tag == "gate_up" else "CTA", q(tail)))
