# The lead of criteria.md (exploration only, not held out; run from docs/results/repeated):
#   python3 held_out_own_exchange_zen4/lead_inject.py held_out_own_exchange_zen4/lead_calibration.json \
#       held_out_own_steps_zen4/cpu_run{1,2,3}.json held_out_landed_zen4/cpu_run{1,2,3}.json
# then `bench validate --recompute` on the files it writes (/tmp/s50/lead_*.json; the directory
# must exist). It writes that calibration's exchange_own (05340fa's build, 2026-12-07 03:57-04:05
# UTC: `tandem calibrate --rows 6,12,24,48,96,192,384,768,1536 --also-layers
# "8192;256,256;1024,1024,1024,1024,1024,1024"`) as timed into the committed runs' profiles,
# entries and medians; into a profile without the own timings (held_out_landed_zen4's) also
# those, as their ratio to each entry's alone pass.
import json, sys
calibration = json.load(open(sys.argv[1]))
src = {}
for c in calibration['device']['dense_rates']:
    for w in c.get('weight_grad_gemms', []):
        for a in w.get('steps_at_once', []):
            src[(tuple(c['widths']), w['devices'], a['rows'])] = a
for path in sys.argv[2:]:
    run = json.load(open(path))
    n = 0
    for c in run['profile']['device']['dense_rates']:
        for w in c.get('weight_grad_gemms', []):
            for a in w.get('steps_at_once', []):
                s = src[(tuple(c['widths']), w['devices'], a['rows'])]
                for t, u in ((a, s), (a['median'], s['median'])):
                    if 'forward_own' not in t:  # an older profile: the own pass as its ratio
                        alone = u['forward_alone'] + u['backward_alone']
                        mine = t['forward_alone'] + t['backward_alone']
                        t['forward_own'] = u['forward_own'] / alone * mine
                        t['backward_own'] = u['backward_own'] / alone * mine
                        t['wait_own'] = u['wait_own']
                    t['exchange_own'] = u['exchange_own']
                n += 1
    out = '/tmp/s50/lead_' + path.split('/')[-2] + '_' + path.split('/')[-1]
    json.dump(run, open(out, 'w'))
    print(out, n)
