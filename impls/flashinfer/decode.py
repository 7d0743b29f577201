"""FlashInfer, one pass and split-K on either layout: ``BatchDecodeWithPagedKVCacheWrapper``
(a multi-token query: ``BatchPrefillWithPagedKVCacheWrapper``, causal; the row's ``call`` says).

Algorithm: FlashInfer's batch decode. For GQA groups of 4 or more it runs its tensor-core path
(``use_tensor_cores=True``: the prefill kernel with the group's query heads as rows, the choice
SGLang makes); below that its CUDA-core decode kernel.
``plan`` (outside the timed call: it syncs with the host) turns the layout into FlashInfer's CSR
form: ``indptr``, the used page ids in order, and each sequence's last-page length. Paged: the
block table's used entries. Dense: the cache ``[B, S, Hkv, D]`` viewed as pages of the largest
power of two up to 64 rows dividing S (sequence b owns pages b * S/ps ...), zero-copy; not one
page per sequence, since FlashInfer splits the KV axis at page granularity. The one-pass
implementation plans with ``disable_split_kv=True`` (like the other backends' one-pass kernels);
``split-k`` lets FlashInfer's scheduler split the KV axis and merge the partial states as it
decides.
An fp8 cache: ``kv_data_type`` at ``plan`` and its scales as the floats ``k_scale``/``v_scale``
at ``run`` (FlashInfer's API takes Python floats: read from the inputs' one-element tensors at
prepare, outside the timed call; the cache itself is passed as stored, no conversion).
A window and soft-capping go to ``plan`` as ``window_left`` (the window less one: FlashInfer
counts the tokens before the query's own) and ``logits_soft_cap``.
FlashInfer's LSE is base 2; the check converts it (``Launch.lse_base2``), outside the timed call.
Its tensor-core path sums the softmax normaliser with an MMA over P cast to the input dtype
(``compute_sfm_v`` in its prefill.cuh), so its LSE is good to the dtype's roundoff, not
float32's (results/nvidia-h200/2026-11-21-vendors/README.md): declared as
``Launch.lse_rounded_sum``, which the check bounds by u more (specs.tolerance); the output is held
to the common bound.
Expected bottleneck: HBM bandwidth at large batch; at batch 1, its split schedule.
"""

import torch

from impls.registry import Launch, Unavailable, Unsupported

WORKSPACE_BYTES = 128 << 20  # FlashInfer's recommended float workspace (split-KV partials)
# GQA groups from this size take the tensor-core path (SGLang's rule); the CUDA-core kernel also
# only exists for groups 1, 2, 3, 4, 6, 8 and 16.
TENSOR_CORE_MIN_GROUP = 4
# Dense cache viewed as pages: the largest of these dividing its rows (specs.inputs makes the row
# count a multiple of 64, so 64 unless a caller's cache is shaped otherwise).
DENSE_PAGE_SIZES = (64, 32, 16, 8, 4, 2, 1)


def probe() -> None:
    major, _ = torch.cuda.get_device_capability()
    if major < 8:
        raise Unavailable(f"FlashInfer's decode kernels need sm80 or newer (this GPU: sm{major}x)")


def _csr(inputs):
    """(indptr, indices, last_page_len, page_size, k_cache, v_cache): the cache in FlashInfer's
    CSR form, index tensors int32 on the device, caches as views (no copy)."""
    p = inputs.problem
    lens = inputs.seq_lens
    dev = inputs.device
    if p.layout == "dense":
        # Sequence b's rows are contiguous: pages b * per_seq + j of ps rows each. FlashInfer
        # splits the KV axis at page granularity, so one page per sequence would forbid a split.
        rows = inputs.k.shape[1]
        if not (inputs.k.is_contiguous() and inputs.v.is_contiguous()):
            raise Unsupported("the dense cache is read as pages without a copy: it must be "
                              "contiguous")
        ps = next(n for n in DENSE_PAGE_SIZES if rows % n == 0)
        per_seq = rows // ps
        table = torch.arange(p.batch * per_seq, dtype=torch.int32, device=dev).view(p.batch, per_seq)
        shape = (p.batch * per_seq, ps, p.num_kv_heads, p.head_dim)
        caches = inputs.k.view(shape), inputs.v.view(shape)
    else:
        ps, table, caches = p.page_size, inputs.block_table, (inputs.k, inputs.v)
    pages = (lens + ps - 1) // ps
    used = torch.arange(table.shape[1], device=dev)[None, :] < pages[:, None]
    indptr = torch.zeros(p.batch + 1, dtype=torch.int32, device=dev)
    indptr[1:] = torch.cumsum(pages, 0)
    return indptr, table[used].contiguous(), (lens - (pages - 1) * ps).int(), ps, caches


def _prepare(inputs, split_kv: bool) -> Launch:
    import flashinfer

    p = inputs.problem
    dtype = inputs.q.dtype
    # a multi-token query is FlashInfer's prefill (append) wrapper over the same paged cache,
    # causal: its mask aligns the query's tokens with the cache's last ones, as the spec does
    prefill = p.q_len > 1
    tensor_cores = prefill or p.group_size >= TENSOR_CORE_MIN_GROUP
    workspace = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=inputs.device)
    indptr, indices, last_page_len, page_size, cache = _csr(inputs)
    # FlashInfer's window_left counts the tokens before the query's own: the spec's window less one
    mask = dict(window_left=p.window - 1 if p.window is not None else -1,
                logits_soft_cap=p.softcap)
    common = dict(q_data_type=dtype, kv_data_type=inputs.k.dtype, sm_scale=p.scale,
                  disable_split_kv=not split_kv, **mask)
    if prefill:
        wrapper = flashinfer.BatchPrefillWithPagedKVCacheWrapper(workspace, "NHD")
        qo_indptr = torch.arange(p.batch + 1, dtype=torch.int32, device=inputs.device) * p.q_len

        def plan():  # what a serving loop redoes per batch (it syncs with the host)
            wrapper.plan(qo_indptr, indptr, indices, last_page_len, p.num_q_heads, p.num_kv_heads,
                         p.head_dim, page_size, causal=True, **common)
    else:
        wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD",
                                                                use_tensor_cores=tensor_cores)

        def plan():  # what a serving loop redoes per batch (it syncs with the host)
            wrapper.plan(indptr, indices, last_page_len, p.num_q_heads, p.num_kv_heads,
                         p.head_dim, page_size, **common)

    plan()
    scales = {} if inputs.k_scale is None else \
        dict(k_scale=float(inputs.k_scale), v_scale=float(inputs.v_scale))

    def run():
        return wrapper.run(inputs.q, cache, return_lse=True, **scales)

    config = {"call": type(wrapper).__name__,
              "kernel": "prefill, causal" if prefill else "tensor-core" if tensor_cores else "cuda-core",
              "split_kv": "flashinfer's scheduler" if split_kv else "off",
              "page_size": page_size}
    if tensor_cores:  # its prefill kernel sums P after the cast to the input dtype (an MMA row sum)
        config["lse"] = "normaliser summed from dtype-rounded P (declared)"
    return Launch(run, config, lse_base2=True, lse_rounded_sum=tensor_cores, plan=plan)


def prepare_one_pass(inputs, out, lse) -> Launch:
    return _prepare(inputs, split_kv=False)


def prepare_split_kv(inputs, out, lse) -> Launch:
    return _prepare(inputs, split_kv=True)
