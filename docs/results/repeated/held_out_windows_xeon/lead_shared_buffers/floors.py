# Each run's repetitions (the edges' group), the fastest reading of the run, each model's
# measured window's best (the process's fastest when the model ended) and each refit's best
# (crowded units / kept). Run from this directory: python3 floors.py A1.json B1.json A2.json B2.json
import json,sys
for f in sys.argv[1:]:
    v=json.load(open(f))
    cs=sorted(c for r in v['rows'] for c in r['cache_per_repetition'])
    q=lambda p: cs[int(p*(len(cs)-1))]*1e6
    best=v['concurrency_probes']['best_cache']
    crowded=sum(c>1.4*best for c in cs)
    mw=' '.join('%s:%.1f'%(w['model'].split('-')[1], w['window']['best_cache']*1e6) for w in v['measured_windows'])
    rf=' '.join('%d:%.1f(%d/%d)'%(c['widths'][1], g['window']['best_cache']*1e6, g['window']['crowded'], g['window']['kept']) for c in v['calibrations'] for g in c['weight_grad_gemms'])
    print(f'{f}: repetitions min {cs[0]*1e6:.1f} p5 {q(.05):.1f} median {q(.5):.1f} us; crowded {crowded}/{len(cs)} vs {best*1e6:.1f}; measured windows best {mw}; refits best {rf}')
