"""What a register cap would free (regs.py --cap's cap-{triton,gluon}.json): per backend, the
one-pass kernels whose residency registers bound (shared memory holds one program more), and of
those, how many ptxas compiles without a spill under the budget of one program more a SM.
    python3 cap.py [FOLDER]"""
import json
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else "."
for backend in ("triton", "gluon"):
    rows = list(dict(json.load(open(f"{folder}/cap-{backend}.json"))).values())  # each kernel once
    by_regs = [r for r in rows if r[6] > r[3]]  # (regs, sass, hash, per_sm, budget, spills, smem_per_sm)
    free = [r for r in by_regs if r[5] == 0]
    print(f"{backend}: {len(rows)} kernels; registers bound {len(by_regs)} (shared memory the rest); "
          f"{len(free)} of those fit one program more a SM without a spill")
    for regs, _, _, per_sm, budget, spills, smem in sorted(by_regs):
        print(f"   {regs:3d} registers, {per_sm} a SM (shared memory: {smem}) -> {budget:3d}: {spills} B spilled")
