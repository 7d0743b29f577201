"""Cold times (us) of several runs side by side, a row per (problem, impl), from the repository
root:
    PYTHONPATH=. python table.py RUN_DIR [RUN_DIR ...]   (harness run folders, packed or not)"""
import os
import sys
from pathlib import Path

from harness.report import load

runs = sys.argv[1:]
names = [os.path.basename(r) for r in runs]
data = {}
for run, name in zip(runs, names):
    for row in load(Path(run))[1]:
        if row["status"] == "PASS":
            data.setdefault((row["problem"].split()[0], row["impl"]), {})[name] = row["cold_us"]
print(f"{'problem':16s} {'impl':16s} " + " ".join(f"{n:>8s}" for n in names))
for key in sorted(data, key=lambda k: (k[1], int(k[0].split(".")[1]))):
    print(f"{key[0]:16s} {key[1]:16s} " + " ".join(f"{data[key].get(n, float('nan')):8.1f}" for n in names))
