"""The cluster GEMM (`tawa-hopper-pipeline{cluster=2}`: 2-CTA thread-block
clusters, each CTA loading its band of the shared B tile and multicasting
it to both, consumers releasing slots on both CTAs) on the CTA simulator,
which runs the CTAs of a cluster concurrently (tawa.interpreters.cta):
against NumPy and bit for bit against the kernel without clusters, on
ragged shapes, with an odd number of 128-row M tiles among them (the last
cluster's second CTA runs past the grid's edge), under each schedule.
(The protocol of the cluster kernel is proved by tawa-verify-protocol,
which runs in the pipeline here; test_verify_protocol_clusters.py.)
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from example_cases import lowered_gemm, simulate_gemm
from xdsl.dialects.builtin import ModuleOp

from tawa.dialects import nvgpu
from tawa.dialects.nvgpu.kernel_info import kernel_info
from tawa.interpreters import find_kernel
from tawa.interpreters.schedule import Schedule

SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first"), Schedule("random", seed=3)]


def schedule_id(s: Schedule) -> str:
    return s.policy if s.policy != "random" else f"random-{s.seed}"


@cache
def lowered(cluster: int) -> ModuleOp:
    """examples/gemm.mlir through the pipeline (persistent, `cluster` CTAs
    per cluster) to the last structured IR."""
    return lowered_gemm(cluster=cluster)


def run(cluster: int, m: int, n: int, k: int, schedule: Schedule, ctas: int | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return simulate_gemm(lowered(cluster), m, n, k, schedule, ctas, seed)


def check(c: np.ndarray, ref: np.ndarray) -> None:
    got = c.astype(np.float32)
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err < 1e-2, err  # bf16 output rounding: about 2e-3


@pytest.mark.slow
def test_the_cluster_gemm_uses_clusters():
    """What the simulator is asked to run: a 2-CTA cluster kernel with
    multicast loads, arrivals on the peer's barriers and cluster syncs."""
    module = lowered(2)
    assert kernel_info(find_kernel(module, "gemm")).cluster == 2
    ops = list(module.walk())
    assert any(isinstance(o, nvgpu.TmaLoadOp | nvgpu.TmaLoadBoxOp) and o.multicast is not None for o in ops)
    assert any(isinstance(o, nvgpu.MBarrierArriveOp) and o.cta is not None for o in ops)
    assert sum(isinstance(o, nvgpu.ClusterSyncOp) for o in ops) >= 2
    assert kernel_info(find_kernel(lowered(1), "gemm")).cluster == 1


@pytest.mark.slow
@pytest.mark.parametrize("schedule", SCHEDULES, ids=schedule_id)
def test_cluster_gemm_with_an_odd_number_of_m_tiles(schedule: Schedule):
    """M = 328: three M tiles (in the cluster programs of the third, rank 1
    has no program of its own and repeats rank 0's), N = 300: two N tiles,
    K = 192: three K steps; 2 clusters of 2 CTAs share out the 4 cluster
    programs."""
    c, ref = run(2, 328, 300, 192, schedule)
    check(c, ref)
    plain, _ = run(1, 328, 300, 192, schedule)
    np.testing.assert_array_equal(c.view(np.uint16), plain.view(np.uint16))


@pytest.mark.slow
@pytest.mark.parametrize(
    "m, n, k, ctas",
    [
        (200, 300, 192, None),  # two M tiles: one cluster program per N tile
        (100, 136, 72, None),  # one M tile: rank 1 of every cluster runs past the edge
        (328, 300, 392, 1),  # one cluster runs every cluster program; K wraps the ring
        (328, 300, 192, 3),  # three clusters for four cluster programs
    ],
)
def test_cluster_gemm_shapes_and_launches(m: int, n: int, k: int, ctas: int | None):
    c, ref = run(2, m, n, k, Schedule("random", seed=m + k), ctas=ctas, seed=1)
    check(c, ref)
    plain, _ = run(1, m, n, k, Schedule("random", seed=m + k), seed=1)
    np.testing.assert_array_equal(c.view(np.uint16), plain.view(np.uint16))
