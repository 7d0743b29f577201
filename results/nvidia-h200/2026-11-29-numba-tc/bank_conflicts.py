"""Shared-memory bank conflicts of the tensor-core kernel's transposed V tile (int16
vt[HEAD_DIM][BLOCK_N + 8], impls/numba/tensor_cores.py), counted on the CPU for a warp's stores
(staging: a lane's 8-byte word column c of one token row r, 4 dims a word) and its B-fragment
reads (lane (g, t): dim j x 8 + g, tokens 16 w + 2 t (+8)), unswizzled and with the kernel's
XOR swizzle (a token's column XOR (2 x (dim // 4)) & (BLOCK_N - 2)). Prints the worst ways.
    python3 bank_conflicts.py"""
from collections import defaultdict

BLOCK_N, THREADS = 64, 128
PAD = BLOCK_N + 8


def ways(words):
    banks = defaultdict(set)
    for w in words:
        banks[w % 32].add(w)
    return max(len(v) for v in banks.values())


def worst(head_dim, swizzle):
    """(stores, reads): the most distinct words one bank serves in one warp instruction."""
    dq = head_dim // 4

    def sw(d):
        return (2 * (d // 4)) & (BLOCK_N - 2) if swizzle else 0

    def store(wp, i, e):  # lane -> word: row r, word column c of the 8-byte loads, dim 4c + e
        found = []
        for lane in range(32):
            r, c = divmod(32 * wp + lane + i * THREADS, dq)
            found.append(((4 * c + e) * PAD + (r ^ sw(4 * c + e))) // 2)
        return found

    def read(w, j, half):  # lane (g, t) -> word: dim 8j + g, tokens 16w + 2t (+8)
        return [((8 * j + lane // 4) * PAD + ((16 * w + half + 2 * (lane % 4)) ^ sw(8 * j + lane // 4))) // 2
                for lane in range(32)]

    stores = max(ways(store(wp, i, e)) for wp in range(THREADS // 32)
                 for i in range(BLOCK_N * dq // THREADS) for e in range(4))
    reads = max(ways(read(w, j, half)) for w in range(4) for j in range(head_dim // 8) for half in (0, 8))
    return stores, reads


for head_dim in (64, 80, 96, 128):
    print(f"head dim {head_dim}: stores/reads, unswizzled {worst(head_dim, False)}, "
          f"swizzled {worst(head_dim, True)}")
