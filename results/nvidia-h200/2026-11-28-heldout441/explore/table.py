import json, sys, lzma, glob, os
def rows(d):
    f = glob.glob(d + "/rows.jsonl*")[0]
    op = lzma.open if f.endswith(".xz") else open
    return [json.loads(l) for l in op(f, "rt")]
runs = sys.argv[1:]
data = {}
for r in runs:
    for x in rows(r):
        if x["status"] != "PASS": continue
        key = (x["problem"].split()[0], x["impl"])
        data.setdefault(key, {})[os.path.basename(r)] = x["cold_us"]
names = [os.path.basename(r) for r in runs]
print(f"{'problem':16s} {'impl':16s} " + " ".join(f"{n:>8s}" for n in names))
for key in sorted(data, key=lambda k: (k[1], int(k[0].split('.')[1]))):
    v = data[key]
    base = v.get(names[0])
    print(f"{key[0]:16s} {key[1]:16s} " + " ".join(f"{v.get(n, float('nan')):8.1f}" for n in names))
