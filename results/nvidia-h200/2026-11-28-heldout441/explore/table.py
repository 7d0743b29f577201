"""Cold times (us) of several runs side by side, a row per (problem, impl):
    python table.py RUN_DIR [RUN_DIR ...]   (each a harness run folder with rows.jsonl[.xz])"""
import glob
import json
import lzma
import os
import sys


def rows(folder):
    path = glob.glob(folder + "/rows.jsonl*")[0]
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f]


runs = sys.argv[1:]
names = [os.path.basename(r) for r in runs]
data = {}
for run, name in zip(runs, names):
    for row in rows(run):
        if row["status"] == "PASS":
            data.setdefault((row["problem"].split()[0], row["impl"]), {})[name] = row["cold_us"]
print(f"{'problem':16s} {'impl':16s} " + " ".join(f"{n:>8s}" for n in names))
for key in sorted(data, key=lambda k: (k[1], int(k[0].split(".")[1]))):
    print(f"{key[0]:16s} {key[1]:16s} " + " ".join(f"{data[key].get(n, float('nan')):8.1f}" for n in names))
