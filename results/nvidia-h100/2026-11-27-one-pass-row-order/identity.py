"""The landed one-pass kernels against main's and the measured branch's: the same PTX (code lines)?"""
import json, re, sys
d = sys.argv[1] if len(sys.argv) > 1 else "."  # the folder of regs-*.json
for b in ("triton", "gluon"):
    old, new, merged = (dict(json.load(open(f"{d}/regs-{b}-{t}.json"))) for t in ("old", "new", "merged"))
    counts = {}
    for key, (regs, sass, ptx) in merged.items():
        split = "'SPLIT_HEAD_ROWS': True" in key
        base = re.sub(r", 'SPLIT_HEAD_ROWS': (True|False)", "", key)
        ref = (new if split else old).get(base)
        if ref is None:
            ref = next((v for k, v in (new if split else old).items()
                        if re.sub(r"\s", "", k) == re.sub(r"\s", "", base)), None)
        same = ref is not None and ref[2] == ptx
        c = counts.setdefault("several row blocks (vs branch)" if split else "one row block (vs main)", [0, 0])
        c[0] += same; c[1] += 1
        if not same:
            print(b, "DIFFERS", "split" if split else "one", (regs, sass, ptx), ref, base[:160])
    print(b, {k: f"{s} of {n} identical" for k, (s, n) in counts.items()})
