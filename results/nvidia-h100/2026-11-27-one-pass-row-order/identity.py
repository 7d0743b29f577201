"""The landed one-pass kernels against main's and the measured branch's: the same PTX (code lines)?
A kernel of one row block a KV head is checked against main's, one of several against the branch's.
    python3 identity.py [FOLDER of regs-{triton,gluon}-{old,new,merged}.json]"""
import json
import re
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else "."
for backend in ("triton", "gluon"):
    old, new, merged = (dict(json.load(open(f"{folder}/regs-{backend}-{tree}.json")))
                        for tree in ("old", "new", "merged"))
    counts = {}
    for key, (regs, sass, ptx) in merged.items():
        several = "'SPLIT_HEAD_ROWS': True" in key
        ref = (new if several else old).get(re.sub(r", 'SPLIT_HEAD_ROWS': (True|False)", "", key))
        same = ref is not None and ref[2] == ptx
        tally = counts.setdefault("several row blocks (vs branch)" if several else "one row block (vs main)", [0, 0])
        tally[0] += same
        tally[1] += 1
        if not same:
            print(backend, "DIFFERS", (regs, sass, ptx), ref, key[:160])
    print(backend, {k: f"{s} of {n} identical" for k, (s, n) in counts.items()})
