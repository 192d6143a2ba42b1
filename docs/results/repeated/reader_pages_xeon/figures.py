# criteria.md's figures from A1-3.json and B1-3.json: each run's groups' floors (spread, median),
# the rank correlation of their halves' floors, the readings crowded against the process's
# fastest, and the memory on huge pages; then the verdict. Run from this directory:
#   python3 figures.py
import json, statistics

CROWDED = 1.4


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0] * len(v)
    for k, i in enumerate(order):
        r[i] = k
    return r


def run(name):
    j = json.load(open(name))
    floors, first, second = [], [], []
    for s in j["seconds"]:
        h = len(s) // 2
        floors.append(min(s))
        first.append(min(s[:h]))
        second.append(min(s[h:]))
    n = len(floors)
    rx, ry = ranks(first), ranks(second)
    rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(rx, ry)) / (n * (n * n - 1))
    crowded = sum(x > CROWDED * j["fastest"] for s in j["seconds"] for x in s)
    total = sum(len(s) for s in j["seconds"])
    spread = max(floors) / min(floors)
    print(f"{name}: floors {min(floors) * 1e6:.2f}-{max(floors) * 1e6:.2f} us, spread "
          f"{spread:.3f}x, median {statistics.median(floors) * 1e6:.2f} us; halves' rank "
          f"correlation {rho:.2f}; {crowded} of {total} crowded; huge pages "
          f"{j['huge_page_kib']} KiB")
    return spread, j["huge_page_kib"]


a = [run(f"A{k}.json") for k in (1, 2, 3)]
b = [run(f"B{k}.json") for k in (1, 2, 3)]
need = 20 * 2 * 2048
valid = [kib >= need for _, kib in b]
print(f"B runs with every region on huge pages: {sum(valid)} of 3")
if sum(s >= 1.10 for s, _ in a) < 2:
    print("P not judged: A's floors spread under 1.10x in 2 or more runs")
else:
    holds = sum(v and sb <= 1.06 and sb < sa for (sa, _), (sb, _), v in zip(a, b, valid))
    fails = sum(v and sb >= 1.10 for (sb, _), v in zip(b, valid))
    print(f"pairs where B spreads at most 1.06x and under A: {holds}; B runs at 1.10x or more: "
          f"{fails}: " + ("P holds" if holds >= 2 else "P fails" if fails >= 2 else "unsettled"))
