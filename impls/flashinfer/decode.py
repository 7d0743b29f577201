"""FlashInfer, dense / paged / split-k: ``BatchDecodeWithPagedKVCacheWrapper`` on the same cache.

Algorithm: FlashInfer's batch decode. For GQA groups of 4 or more it runs its tensor-core path
(``use_tensor_cores=True``: the prefill kernel with the group's query heads as rows, the choice
SGLang makes and the faster one in ../shared/ANCHORS.md); below that its CUDA-core decode kernel.
``plan`` (outside the timed call: it syncs with the host) turns the layout into FlashInfer's CSR
form: ``indptr``, the used page ids in order, and each sequence's last-page length. Paged: the
block table's used entries. Dense: the cache ``[B, S, Hkv, D]`` read as B pages of S rows (page
b = sequence b, last page length = its length), zero-copy. ``paged`` and ``dense`` plan with
``disable_split_kv=True`` (one pass, like the other backends' one-pass variants); ``split-k`` lets
FlashInfer's scheduler split the KV axis and merge the partial states as it decides.
FlashInfer's LSE is base 2; the check converts it (``Launch.lse_base2``), outside the timed call.
Its tensor-core path sums the softmax normaliser with an MMA over P cast to the input dtype
(``compute_sfm_v`` in its prefill.cuh), so its LSE is good to the dtype's roundoff (measured:
up to 7e-4 in bf16, 17x the float32 LSE bound): declared as ``Launch.lse_rounded_sum``, which
the check bounds by u more (specs.tolerance); the output is held to the common bound.
Expected bottleneck: HBM bandwidth at large batch; at batch 1, its split schedule.
"""

import torch

from impls.registry import Launch, Unavailable

WORKSPACE_BYTES = 128 << 20  # FlashInfer's recommended float workspace (split-KV partials)
TENSOR_CORE_MIN_GROUP = 4


def probe() -> None:
    major, _ = torch.cuda.get_device_capability()
    if major < 8:
        raise Unavailable(f"FlashInfer's decode kernels need sm80 or newer (this GPU: sm{major}x)")


def _csr(inputs):
    """(indptr, indices, last_page_len, page_size) of the cache, all int32 on the device."""
    p = inputs.problem
    lens = inputs.seq_lens
    dev = inputs.device
    if p.layout == "dense":
        ids = torch.arange(p.batch + 1, dtype=torch.int32, device=dev)
        return ids, ids[:-1], lens, inputs.k.shape[1]
    ps = p.page_size
    pages = (lens + ps - 1) // ps
    used = torch.arange(inputs.block_table.shape[1], device=dev)[None, :] < pages[:, None]
    indptr = torch.zeros(p.batch + 1, dtype=torch.int32, device=dev)
    indptr[1:] = torch.cumsum(pages, 0)
    return indptr, inputs.block_table[used].contiguous(), lens - (pages - 1) * ps, ps


def _prepare(inputs, split_kv: bool) -> Launch:
    import flashinfer

    p = inputs.problem
    dtype = inputs.q.dtype
    tensor_cores = p.group_size >= TENSOR_CORE_MIN_GROUP
    workspace = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=inputs.device)
    wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD",
                                                            use_tensor_cores=tensor_cores)
    indptr, indices, last_page_len, page_size = _csr(inputs)
    wrapper.plan(indptr, indices, last_page_len, p.num_q_heads, p.num_kv_heads, p.head_dim,
                 page_size, q_data_type=dtype, kv_data_type=dtype, sm_scale=p.scale,
                 disable_split_kv=not split_kv)
    cache = (inputs.k, inputs.v)

    def run():
        return wrapper.run(inputs.q, cache, return_lse=True)

    config = {"kernel": "tensor-core" if tensor_cores else "cuda-core",
              "split_kv": "flashinfer's scheduler" if split_kv else "off",
              "page_size": page_size}
    if tensor_cores:  # its prefill kernel sums P after the cast to the input dtype (an MMA row sum)
        config["lse"] = "normaliser summed from dtype-rounded P (declared)"
    return Launch(run, config, lse_base2=True, lse_rounded_sum=tensor_cores)


def prepare_one_pass(inputs, out, lse) -> Launch:
    return _prepare(inputs, split_kv=False)


def prepare_split_kv(inputs, out, lse) -> Launch:
    return _prepare(inputs, split_kv=True)
