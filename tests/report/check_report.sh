#!/usr/bin/env bash
# `tandem bench scaling --report` on a small model: the HTML parses, every inline SVG parses
# as XML, nothing is fetched or scripted, and the table, charts and training curves are all
# there. Usage: check_report.sh TANDEM. Needs python3 (skipped without it, tests/skip.sh).
set -euo pipefail
TANDEM=$1
source "$(dirname "$0")/../skip.sh"
command -v python3 > /dev/null || skip "needs python3"
WORK=$(mktemp -d /tmp/tandem_report_test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
printf 'epoch,accuracy,loss,val_loss\n0,0.5,1.2,1.1\n1,0.7,0.9,0.95\n2,0.8,0.7,0.9\n' > "$WORK/log.csv"
"$TANDEM" bench scaling --layers 64,32 --batch-size 64 --devices 1,2 --steps 1 --repeats 1 \
  --history "$WORK/log.csv" --report "$WORK/report.html" --json "$WORK/bench.json" \
  > "$WORK/out.txt"
grep -q "2 devices mirrored" "$WORK/out.txt"
grep -q "2 devices host" "$WORK/out.txt"
python3 - "$WORK/report.html" "$WORK/bench.json" << 'PY'
import json, re, sys, xml.etree.ElementTree as ET
from html.parser import HTMLParser

html = open(sys.argv[1]).read()

class Check(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.tags = [], []
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            assert not (name in ("src", "href") and value and "://" in value), (tag, name, value)
        if tag not in ("meta", "br", "rect", "line", "circle", "polyline"):
            self.stack.append(tag)
    def handle_endtag(self, tag):
        if tag in ("rect", "line", "circle", "polyline"):
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

c = Check()
c.feed(html)
assert not c.stack, f"unclosed {c.stack}"
assert "script" not in c.tags, "the report must not run scripts"
svgs = re.findall(r"<svg.*?</svg>", html, re.S)
assert len(svgs) == 4, f"{len(svgs)} charts"  # speedup, breakdown, loss, accuracy
for s in svgs:
    root = ET.fromstring(s)
    assert root.tag.endswith("svg")
for needle in ["speedup", "Time per step by phase", "predicted", "ideal", "log.csv"]:
    assert needle in html, needle
bench = json.load(open(sys.argv[2]))
assert [c["name"] for c in bench["configs"]] == ["1 device", "2 devices mirrored", "2 devices host"]
assert all(c["predicted_speedup"] for c in bench["configs"])
print("report OK:", len(html), "bytes,", len(svgs), "charts")
PY
echo PASS
