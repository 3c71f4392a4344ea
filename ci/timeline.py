#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a step's time goes, launch by launch, from the timeline engine_gpu_bench --timeline
writes (a build configured with -Dengine_timeline=true; engine/gpu/kernels/timeline.cuh):

    ci/timeline.py [--layers A:B] [--ctas [--split KIND:N ...]] [--by-sm KIND[:LO-[HI]] ...]
                   [--out FILE] TIMELINE.csv [...]

Each CSV row (a file ending in .gz is read through gzip) is one CTA: tag, launch (which launch
of that tag), block, sm, and three stamps (start 0, PDL-wait return w, end 1) on the global
timer (g*, ns) and on the SM's cycle counter (c*), each from any origin (the bench writes the
global timer from the step's first start and each SM's cycles from its first start); the wait's
stamps empty where the kernel did not wait. The cycle counter is finer; per SM, a least-squares
line from its cycles to the global timer puts every stamp on one clock (the fit's residual and
the global timer's step are printed, so its precision can be read).

Launches are ordered by their first CTA's start; the chain is every launch but the side
branch's (l2_pull). A GEMV launch is named by its place: o_proj after uv or merge_uv, q_b after
the prep, lm_head before argmax, dense elsewhere. For each launch L after chain launch P, us:
    seg     L's last end minus P's last end: L's segment of the critical path
    gap     L's first wait return minus P's last end (the PDL release, and any kernel between
            them that is not instrumented: the call sites before the router and qkv_a)
    body    L's last end minus its first wait return: its work once it may run
    tail    L's last end minus its median end: the stragglers
    pre     the median CTA's time from its start to its wait return
    early   P's last end minus L's first start: how long L's first CTA started before P ended
    late    L's last start minus P's last end: positive when some of L's CTAs found no room on
            an SM until after P had ended (their weights could not be loaded ahead)
    ahead   the fraction of L's CTAs that started before P's last end
Each kind is summarised over its launches in the layers chosen (--layers A:B, 0-based
layer numbers as counted by qkva_prep launches, default every layer but the first three
and the last): median of each column, and the sum of the medians' segments a layer.
--ctas also prints, per kind, quantiles (0, 10, 50, 90, 100%) over all its CTAs in those
layers of when each started, when its wait returned and when it ended (us from its launch's
first start), and of `run`, its end minus its wait's return (what it did once it could: a
kind whose CTAs differ in work, as the MoE's shared and routed tiles, shows two groups).
--split KIND:N (with --ctas, repeatable) also prints those quantiles for KIND's blocks below N
and from N on, as rows KIND<N and KIND>=N (gate_up:112: Kimi-K2's shared expert's 112 parts at
tp-shape 8 come first in gate/up's grid, its routed tiles after them, in the shared-first order;
since the twenty-seventh session the default order puts the routed tiles first where they fit
one an SM, T = 1 at Kimi-K2: there the split mixes them, see engine/gpu/kernels/moe.cu).
--by-sm KIND[:LO-[HI]] (repeatable) prints where KIND's blocks (those LO .. HI - 1 of each launch,
default all) ran, SM by SM: how many SMs had 0, 1, 2, .. of them (a launch's mean, against the SMs
the file names), each block's run by how many its SM had, and the last one's end after the
launch's median wait return (the twenty-seventh session found the MoE's routed tiles two on some SMs
and none on others this way: gate_up:0-128 at T = 1, gate_up:112- at T = 3 at Kimi-K2's tp-shape 8).
--out FILE also writes the per-launch table as CSV (written whole, then renamed).
Exit 2 on a bad argument or file."""
import argparse
import csv
import gzip
import os
import statistics
import sys

FIELDS = ('tag', 'launch', 'block', 'sm', 'g0', 'gw', 'g1', 'c0', 'cw', 'c1')


def die(msg):
    print(f'timeline: {msg}', file=sys.stderr)
    sys.exit(2)


def read(path):
    try:
        f = (gzip.open(path, 'rt', newline='', encoding='utf-8') if path.endswith('.gz')
             else open(path, newline='', encoding='utf-8'))
    except OSError as e:
        die(f'{path}: cannot read ({e.strerror})')
    with f:
        r = csv.DictReader(f)
        if not r.fieldnames or any(k not in r.fieldnames for k in FIELDS):
            die(f'{path}: not a timeline CSV (expected the columns {",".join(FIELDS)})')
        rows = []
        for i, row in enumerate(r, 2):
            try:
                rec = {k: (row[k] if k == 'tag' else int(row[k]) if row[k] != '' or k not in ('gw', 'cw') else None)
                       for k in FIELDS}
            except (TypeError, ValueError):
                die(f'{path}:{i}: expected integers in {",".join(FIELDS[1:])} (gw and cw may be empty)')
            if (rec['gw'] is None) != (rec['cw'] is None):
                die(f'{path}:{i}: gw and cw: both or neither')
            rows.append(rec)
    if not rows:
        die(f'{path}: no records')
    return rows


def fit_clocks(rows):
    """Per SM, g = a + b c over every stamp pair; returns {sm: (a, b)}, the worst residual (ns),
    the global timer's smallest step seen (ns)."""
    pairs = {}
    for r in rows:
        for c, g in ((r['c0'], r['g0']), (r['cw'], r['gw']), (r['c1'], r['g1'])):
            if g is not None:
                pairs.setdefault(r['sm'], []).append((c, g))
    fits, worst = {}, 0.0
    for sm, p in pairs.items():
        if len(p) < 2 or len({c for c, _ in p}) < 2:
            c, g = p[0]
            fits[sm] = (g - c, 1.0) if len(p) == 1 else (statistics.mean(g for _, g in p), 0.0)
            continue
        c0 = statistics.mean(c for c, _ in p)
        g0 = statistics.mean(g for _, g in p)
        sxx = sum((c - c0) ** 2 for c, _ in p)
        sxy = sum((c - c0) * (g - g0) for c, g in p)
        b = sxy / sxx
        a = g0 - b * c0
        fits[sm] = (a, b)
        worst = max(worst, max(abs(a + b * c - g) for c, g in p))
    gs = sorted({g for r in rows for g in (r['g0'], r['gw'], r['g1']) if g is not None})
    steps = [y - x for x, y in zip(gs, gs[1:]) if y > x]
    return fits, worst, (min(steps) if steps else 0)


def launches(rows, fits):
    t = {}
    for r in rows:
        a, b = fits[r['sm']]

        def at(c, g):
            return a + b * c if b else float(g)

        cta = (at(r['c0'], r['g0']), at(r['cw'], r['gw']) if r['gw'] is not None else None, at(r['c1'], r['g1']),
               r['block'], r['sm'])
        t.setdefault((r['tag'], r['launch']), []).append(cta)
    out = []
    for (tag, n), ctas in t.items():
        waits = [w for _, w, _, _, _ in ctas if w is not None]
        ends = sorted(e for _, _, e, _, _ in ctas)
        starts = [s for s, _, _, _, _ in ctas]
        out.append({'tag': tag, 'launch': n, 'ctas': len(ctas), 'start': min(starts), 'each': ctas,
                    'wait': min(waits) if waits else None, 'end': ends[-1], 'end_med': statistics.median(ends),
                    'pre': statistics.median(w - s for s, w, _, _, _ in ctas if w is not None) if waits else None})
    out.sort(key=lambda L: L['start'])
    return out


def name_kinds(ls):
    chain = [L for L in ls if L['tag'] != 'l2_pull']
    for i, L in enumerate(chain):
        L['kind'] = L['tag']
        if L['tag'] in ('gemv', 'gemv_pairs'):
            prev = chain[i - 1]['tag'] if i else ''
            nxt = chain[i + 1]['tag'] if i + 1 < len(chain) else ''
            L['kind'] = ('o_proj' if prev in ('uv', 'merge_uv') else 'q_b' if prev in ('qkva_prep', 'mla_prep')
                         else 'lm_head' if nxt == 'argmax' else 'dense')
    for L in ls:
        L.setdefault('kind', L['tag'])
    layer = -1
    for L in chain:
        if L['tag'] in ('qkva_prep', 'persist_attn'):
            layer += 1
        L['layer'] = layer
    return chain


def measure(chain):
    for i, L in enumerate(chain):
        if i == 0:
            continue
        pe = chain[i - 1]['end']
        L['seg'] = (L['end'] - pe) / 1e3
        L['gap'] = (L['wait'] - pe) / 1e3 if L['wait'] is not None else None
        L['body'] = (L['end'] - L['wait']) / 1e3 if L['wait'] is not None else None
        L['tail'] = (L['end'] - L['end_med']) / 1e3
        L['early'] = (pe - L['start']) / 1e3
        starts = [s0 for s0, _, _, _, _ in L['each']]
        L['late'] = (max(starts) - pe) / 1e3
        L['ahead'] = sum(1 for x in starts if x < pe) / len(starts)
        L['pre_us'] = L['pre'] / 1e3 if L['pre'] is not None else None


def summarize(path, chain, lo, hi, res, step):
    n_layers = max(L['layer'] for L in chain) + 1
    a = lo if lo is not None else min(3, max(n_layers - 1, 0))
    b = hi if hi is not None else max(n_layers - 1, a + 1)
    sel = [L for L in chain if a <= L['layer'] < b and 'seg' in L]
    span = (chain[-1]['end'] - chain[0]['start']) / 1e3
    print(f'# {path}: {len(chain)} launches, {n_layers} layers, first start to last end {span:.1f} us; '
          f'clock fit worst residual {res:.0f} ns, global timer step {step} ns')
    if not sel:
        print(f'#   no launches in layers {a}:{b}')
        return [], []
    kinds = []
    for L in sel:
        if L['kind'] not in kinds:
            kinds.append(L['kind'])
    cols = ('seg', 'gap', 'body', 'tail', 'pre_us', 'early', 'late', 'ahead')
    print(f'#   layers {a}:{b}, medians over each kind\'s launches, us')
    print('#   ' + 'kind'.ljust(13) + 'n'.rjust(4) + 'ctas'.rjust(6) + ''.join(c.replace('_us', '').rjust(8) for c in cols))
    total = 0.0
    for k in kinds:
        ks = [L for L in sel if L['kind'] == k]
        med = {}
        for c in cols:
            v = [L[c] for L in ks if L.get(c) is not None]
            med[c] = statistics.median(v) if v else None
        total += med['seg']
        print('#   ' + k.ljust(13) + str(len(ks)).rjust(4) + str(int(statistics.median(L['ctas'] for L in ks))).rjust(6)
              + ''.join((f'{med[c]:8.2f}' if med[c] is not None else '       -') for c in cols))
    print(f'#   a layer (the medians\' segments summed): {total:.2f} us')
    return kinds, sel


def quantiles(v):
    """0, 10, 50, 90 and 100% of v (nearest rank below)."""
    v = sorted(v)
    return [v[int(p * (len(v) - 1))] for p in (0.0, 0.1, 0.5, 0.9, 1.0)]


def cta_quantiles(kinds, sel, splits=None):
    """--ctas: per kind, quantiles over its CTAs of start, wait and end from the launch's first
    start, and of run (end minus wait), us; for each (kind, n) of splits also over its blocks
    below n and from n on."""
    print('#   CTAs of each kind in those layers: quantiles 0/10/50/90/100% over all of them, us from their launch\'s '
          'first start; run = end minus the wait\'s return')
    rows = [(k, k, lambda b: True) for k in kinds]
    for k, n in splits or []:
        if k in kinds:
            rows += [(k, f'{k}<{n}', lambda b, n=n: b < n), (k, f'{k}>={n}', lambda b, n=n: b >= n)]
    for k, name, keep in rows:
        cols = {'start': [], 'wait': [], 'end': [], 'run': []}
        for L in sel:
            if L['kind'] != k:
                continue
            for s0, w, e, b, _ in L['each']:
                if not keep(b):
                    continue
                cols['start'].append((s0 - L['start']) / 1e3)
                cols['end'].append((e - L['start']) / 1e3)
                if w is not None:
                    cols['wait'].append((w - L['start']) / 1e3)
                    cols['run'].append((e - w) / 1e3)
        for c, v in cols.items():
            if v:
                print('#   ' + (name if c == 'start' else '').ljust(13) + c.ljust(6) + ''.join(f'{x:8.2f}' for x in quantiles(v)))


def by_sm(sel, n_sms, specs):
    """--by-sm: per (kind, block range), where its launches' blocks ran: SMs with 0, 1, 2, ..
    of them (a launch's mean; 0 counted against the n_sms SMs the file's records name), each
    block's run (end minus wait) by how many its SM had, and the last block's end after the
    launch's median wait return, us."""
    for k, lo, hi in specs:
        name = k if lo == 0 and hi is None else f'{k}[{lo}:{"" if hi is None else hi}]'
        hist, runs, last, n = {}, {}, [], 0
        for L in sel:
            if L['kind'] != k:
                continue
            mine = [c for c in L['each'] if c[3] >= lo and (hi is None or c[3] < hi)]
            waits = [w for _, w, _, _, _ in L['each'] if w is not None]
            if not mine or not waits:
                continue
            n += 1
            per = {}
            for c in mine:
                per[c[4]] = per.get(c[4], 0) + 1
            for v in list(per.values()) + [0] * max(0, n_sms - len(per)):
                hist[v] = hist.get(v, 0) + 1
            for _, w, e, _, sm in mine:
                if w is not None:
                    runs.setdefault(per[sm], []).append((e - w) / 1e3)
            last.append((max(e for _, _, e, _, _ in mine) - statistics.median(waits)) / 1e3)
        if not n:
            print(f'#   by SM {name}: no launches with such blocks in those layers')
            continue
        print(f'#   by SM {name}: {n} launches; SMs with 0/1/2/.. of its blocks (a launch\'s mean): '
              + ', '.join(f'{v}: {c / n:.1f}' for v, c in sorted(hist.items())))
        for v in sorted(runs):
            q = quantiles(runs[v])
            print(f'#     run with {v} on its SM: median {q[2]:.2f} p90 {q[3]:.2f} max {q[4]:.2f} us (n {len(runs[v])})')
        q = quantiles(last)
        print(f'#     last end after the launch\'s median wait: median {q[2]:.2f} p90 {q[3]:.2f} max {q[4]:.2f} us')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('csv', nargs='+')
    ap.add_argument('--layers', help='A:B, the layers summarised (0-based, B excluded)')
    ap.add_argument('--out', help='the per-launch table as CSV')
    ap.add_argument('--ctas', action='store_true', help='also quantiles over each kind\'s CTAs')
    ap.add_argument('--split', action='append', default=[], metavar='KIND:N',
                    help='with --ctas: also KIND\'s blocks below N and from N on')
    ap.add_argument('--by-sm', action='append', default=[], metavar='KIND[:LO-[HI]]',
                    help='where KIND\'s blocks (those LO .. HI - 1) ran, SM by SM')
    o = ap.parse_args()
    splits = []
    for a in o.split:
        k, _, n = a.partition(':')
        if not k or not n.isdigit() or int(n) < 1:
            die(f'--split {a}: expected KIND:N, a kind and a block count >= 1 (e.g. gate_up:112)')
        splits.append((k, int(n)))
    specs = []
    for a in o.by_sm:
        k, _, r = a.partition(':')
        lo_s, dash, hi_s = r.partition('-')
        ok = k and (not r or (dash and lo_s.isdigit() and (not hi_s or hi_s.isdigit())))
        lo_b, hi_b = (int(lo_s), int(hi_s) if hi_s else None) if r and ok else (0, None)
        if not ok or (hi_b is not None and hi_b <= lo_b):
            die(f'--by-sm {a}: expected KIND, or KIND:LO-HI or KIND:LO- (blocks LO .. HI - 1, LO < HI; '
                'e.g. gate_up:0-128)')
        specs.append((k, lo_b, hi_b))
    if splits and not o.ctas:
        die('--split without --ctas: the split rows are --ctas\'s quantiles (give --ctas)')
    lo = hi = None
    if o.layers:
        try:
            lo, hi = (int(x) for x in o.layers.split(':'))
        except ValueError:
            die(f'--layers {o.layers}: expected A:B, two integers')
        if lo < 0 or hi <= lo:
            die(f'--layers {o.layers}: expected 0 <= A < B')
    if o.out:
        d = os.path.dirname(os.path.abspath(o.out))
        if not os.path.isdir(d):
            die(f'--out {o.out}: its folder does not exist')
        if any(os.path.abspath(o.out) == os.path.abspath(c) for c in o.csv):
            die(f'--out {o.out} is one of the inputs')
    table = []
    for path in o.csv:
        rows = read(path)
        fits, res, step = fit_clocks(rows)
        chain = name_kinds(launches(rows, fits))
        measure(chain)
        kinds, sel = summarize(path, chain, lo, hi, res, step)
        if o.ctas:
            cta_quantiles(kinds, sel, splits)
        if specs:
            by_sm(sel, len({r['sm'] for r in rows}), specs)
        for L in chain:
            table.append([path, L['layer'], L['kind'], L['launch'], L['ctas']] +
                         [f'{L[c]:.3f}' if L.get(c) is not None else '' for c in ('seg', 'gap', 'body', 'tail', 'pre_us', 'early', 'late', 'ahead')])
    if o.out:
        tmp = o.out + '.tmp'
        with open(tmp, 'w', newline='', encoding='utf-8') as f:
            w = csv.writer(f)
            w.writerow(['file', 'layer', 'kind', 'launch', 'ctas', 'seg_us', 'gap_us', 'body_us', 'tail_us', 'pre_us',
                        'early_us', 'late_us', 'ahead'])
            w.writerows(table)
        os.replace(tmp, o.out)


if __name__ == '__main__':
    main()
