# Writes a calibration's host_exchange (the host's copies at once, timed up to the shared
# cache) into earlier runs' profiles, for a lead: python3 lead_inject.py CAL.json OUTDIR RUN.json...
import json, os, sys
cal = json.load(open(sys.argv[1]))['device']
for path in sys.argv[3:]:
    run = json.load(open(path))
    run['profile']['device']['host_exchange'] = cal['host_exchange']
    run['profile']['device']['host_exchange_devices'] = cal['host_exchange_devices']
    out = os.path.join(sys.argv[2], os.path.basename(os.path.dirname(path)) + '_' + os.path.basename(path))
    json.dump(run, open(out, 'w'))
    print(out)
