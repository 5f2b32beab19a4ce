"""Repeated launches and CUDA graphs on a Hopper GPU (examples/gemm.mlir).

A launch with the same arguments as an earlier one reuses its packed
parameters (`tawa.Kernel.__call__`, docs/runtime.md "Launch cost"): these
tests check that the reuse never launches stale parameters (new tensors,
new sizes, in-place changes), that it follows torch's current stream, and
that a launch captured in a CUDA graph replays on the graph's tensors.
Outputs are poisoned with NaN before every launch; float32 references.
"""

from __future__ import annotations

import pytest
from test_gemm_gpu import grid, inputs, kernel_for, poisoned, rel_err

pytestmark = pytest.mark.gpu
TOL = 1e-2


def test_repeated_launches_reuse_only_what_is_the_same(cuda, seed):
    import torch

    gemm = kernel_for()
    M, N, K = 200, 264, 96
    A, B = inputs(M, N, K, "bf16", seed)
    C, _ = poisoned(M, N, "bf16")
    for _ in range(3):  # the first launch prepares; the others reuse
        C.fill_(float("nan"))
        gemm(A, B, C, M, N, K, grid=grid(M, N))
        torch.cuda.synchronize()
        assert rel_err(C, A, B) < TOL
    assert len(gemm._prepared) >= 1
    # The same tensors with new contents: the reused launch reads them.
    A.copy_(torch.randn_like(A, dtype=torch.float32).to(A.dtype))
    C.fill_(float("nan"))
    gemm(A, B, C, M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    assert rel_err(C, A, B) < TOL
    # New tensors of the same shape, and a smaller problem in the same buffers.
    A2, B2 = inputs(M, N, K, "bf16", seed + 1)
    C2, _ = poisoned(M, N, "bf16")
    gemm(A2, B2, C2, M, N, K, grid=grid(M, N))
    m, n = 136, 128
    Cs, _ = poisoned(m, n, "bf16")
    gemm(A[:m], B[:n], Cs, m, n, K, grid=grid(m, n))
    torch.cuda.synchronize()
    assert rel_err(C2, A2, B2) < TOL and rel_err(Cs, A[:m], B[:n]) < TOL


def test_new_tensors_of_a_known_layout_launch_through_its_template(cuda, seed):
    """A model's new activations every call: new tensors of the same shapes,
    at new addresses (more than `PREPARED_LAUNCHES` of them), each launch
    writing its own addresses into the layout's template; kept tensors are
    reread correctly; a misaligned view of the same layout is not the
    template's (its launch is checked and refused)."""
    import torch

    from tawa.runtime import ArgumentError

    gemm = kernel_for()
    M, N, K = 192, 256, 64
    kept, layouts = [], set(gemm._bound)  # (the compiled kernel is shared with other tests)
    for i in range(70):
        A, B = inputs(M, N, K, "bf16", seed + i)
        C, _ = poisoned(M, N, "bf16")
        gemm(A, B, C, M, N, K, grid=grid(M, N))
        kept.append((A, B, C))  # alive: every call gets new addresses
        if i % 10 == 0 or i == 69:
            torch.cuda.synchronize()
            assert rel_err(C, A, B) < TOL, i
    (layout,) = set(gemm._bound) - layouts  # one layout, launched through its template
    assert type(gemm._bound[layout]).__name__ == "BoundLaunch"
    torch.cuda.synchronize()
    for i, (A, B, C) in enumerate(kept):
        assert rel_err(C, A, B) < TOL, i
    wide = torch.empty(M * K + 8, device="cuda", dtype=torch.bfloat16)
    A = wide[1:].view(-1)[: M * K].view(M, K)  # 2 bytes past a 16-byte boundary
    with pytest.raises(ArgumentError, match="16-byte aligned"):
        gemm(A, kept[0][1], kept[0][2], M, N, K, grid=grid(M, N))


def test_a_thread_whose_first_cuda_work_is_a_launch(cuda, seed):
    """A new thread that has made no CUDA call has no current context (the
    runtime binds one at a thread's first runtime call): its first launch,
    repeated or on new tensors, makes the device's primary context current
    instead of failing with CUDA_ERROR_INVALID_CONTEXT (autograd's backward
    thread when tawa's attention is its first node hit this)."""
    import threading

    import torch

    gemm = kernel_for()
    M, N, K = 128, 192, 64
    A, B = inputs(M, N, K, "bf16", seed)
    C, _ = poisoned(M, N, "bf16")
    gemm(A, B, C, M, N, K, grid=grid(M, N))  # loaded, prepared and templated in this thread
    gemm(A, B, poisoned(M, N, "bf16")[0], M, N, K, grid=grid(M, N))
    torch.cuda.synchronize()
    outputs = [poisoned(M, N, "bf16")[0] for _ in range(2)]
    for C2 in (C, *outputs):
        C2.fill_(float("nan"))
    torch.cuda.synchronize()
    errors = []

    def launch(C2):
        try:
            gemm(A, B, C2, M, N, K, grid=grid(M, N))
        except Exception as err:  # reported below, in the test's thread
            errors.append(err)

    for C2 in (C, *outputs):  # the same arguments (a prepared launch), then new outputs (the template)
        thread = threading.Thread(target=launch, args=(C2,))
        thread.start()
        thread.join()
    torch.cuda.synchronize()
    assert not errors, errors
    for C2 in (C, *outputs):
        assert rel_err(C2, A, B) < TOL


def test_reused_launch_follows_the_current_stream(cuda, seed):
    import torch

    gemm = kernel_for()
    M, N, K = 256, 256, 128
    A, B = inputs(M, N, K, "bf16", seed)
    C, _ = poisoned(M, N, "bf16")
    gemm(A, B, C, M, N, K, grid=grid(M, N))  # prepared on the default stream
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        C.fill_(float("nan"))
        gemm(A, B, C, M, N, K, grid=grid(M, N))  # must run on `side`, after the fill
        done = torch.isfinite(C).all()
    side.synchronize()
    assert bool(done) and rel_err(C, A, B) < TOL


def test_launch_captured_in_a_cuda_graph_replays(cuda, seed):
    import torch

    gemm = kernel_for()
    M, N, K = 384, 512, 256
    A, B = inputs(M, N, K, "bf16", seed)
    C, _ = poisoned(M, N, "bf16")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as torch.cuda.graphs asks
        gemm(A, B, C, M, N, K, grid=grid(M, N))
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gemm(A, B, C, M, N, K, grid=grid(M, N))
    for round in range(2):
        A.copy_(torch.randn(M, K, device="cuda").to(A.dtype))
        C.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert rel_err(C, A, B) < TOL, f"replay {round}"


def test_reused_launch_keys_strides_and_dtype(cuda, seed):
    """The same pointer and shape with other strides (a column slice of a
    wider matrix, which A may be: it is read through a tensor map only) or
    another dtype (a view) is a new launch, never the reused one."""
    import torch

    from tawa.runtime import ArgumentError

    gemm = kernel_for()
    M, N, K = 256, 256, 128
    _, B = inputs(M, N, K, "bf16", seed)
    wide = torch.randn(M, 2 * K, device="cuda").to(torch.bfloat16)
    dense = wide.view(-1)[: M * K].view(M, K)  # the pointer of `wide`, contiguous
    sliced = wide[:, :K]  # the same pointer and shape, rows 2K apart
    assert dense.data_ptr() == sliced.data_ptr() and dense.shape == sliced.shape
    C, _ = poisoned(M, N, "bf16")
    for A in (dense, sliced, dense, sliced):  # each one twice: the second time reused
        C.fill_(float("nan"))
        gemm(A, B, C, M, N, K, grid=grid(M, N))
        torch.cuda.synchronize()
        assert rel_err(C, A, B) < TOL
    with pytest.raises(ArgumentError, match="expected bf16 elements"):
        gemm(dense.view(torch.float16), B, C, M, N, K, grid=grid(M, N))


def test_reused_launch_of_cupy_arrays_follows_cupys_stream(cuda, seed):
    """CuPy arrays (f16: CuPy has no bf16) take the same fast path, on CuPy's
    current stream."""
    import cupy as cp
    import torch

    gemm = kernel_for("f16")
    M, N, K = 256, 256, 128
    A, B = (cp.asarray(t) for t in inputs(M, N, K, "f16", seed))
    C = cp.full((M, N), cp.nan, dtype=cp.float16)
    gemm(A, B, C, M, N, K, grid=grid(M, N))
    with cp.cuda.Stream(non_blocking=True) as side:
        for _ in range(2):
            C.fill(cp.nan)  # on `side`: the launch must come after it
            gemm(A, B, C, M, N, K, grid=grid(M, N))
        side.synchronize()
    ref = torch.as_tensor(A, device="cuda").float() @ torch.as_tensor(B, device="cuda").float().T
    got = torch.as_tensor(C, device="cuda").float()
    assert ((got - ref).norm() / ref.norm()).item() < TOL
