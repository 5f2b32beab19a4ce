"""Thread-block clusters in the CTA simulator (tawa.interpreters.cta,
tawa.interpreters.nvgpu): the CTAs of a cluster run concurrently and reach
each other's mbarriers and shared memory through `mbarrier_arrive ... cta(r)`,
`tma_load ... multicast M` and `cluster_sync`; misuse that is undefined
behaviour on the GPU is a one-line error naming the op and the CTA.

The kernels are hand-written nvgpu IR over f32 arrays: 8x16 tiles (512
bytes) copied global -> shared -> global by TMA through `%buf`, whose
loads complete on `%full`; `%bar` is the barrier the CTAs signal each other
on.  Values are checked, not just that the kernels run."""

from __future__ import annotations

import numpy as np
import pytest

import tawa
from tawa.diagnostics import TawaError
from tawa.dialects.nvgpu.kernel_info import persistent_ctas
from tawa.interpreters import InterpreterError
from tawa.interpreters.cta import DEFAULT_CTAS
from tawa.interpreters.errors import SimulationError
from tawa.interpreters.schedule import Schedule

TILE = "!nvgpu.tma_desc<8x16xf32>"
BUF = "!nvgpu.smem<1x8x16xf32>"
BAR = "!nvgpu.mbarrier<1>"

SCHEDULES = [Schedule("producer-first"), Schedule("consumer-first")] + [Schedule("random", seed) for seed in range(4)]


def schedule_id(s: Schedule) -> str:
    return s.policy if s.policy != "random" else f"random-{s.seed}"


def kernel(body: str, cluster: int | None = 2, threads: int = 128, bar_count: int = 1, init: str | None = None) -> str:
    """A kernel @k(%A, %X, %Out) of `threads` threads per CTA in clusters of
    `cluster` (None: no clusters) running `body` after the barriers'
    initialisation (`init`, by default: thread 0 initialises %full (1
    arrival) and %bar (`bar_count`), then the cluster syncs).  Names for the
    body: %c0 %c1 %c2 %c8, %tid, %rank, %cta (block id x), %leader (thread 0),
    %is0 / %is1 (rank 0 / 1), %row (8 · block id), the TMA maps %ta %tx %to."""
    attr = f"threads = {threads}" + (f", cluster = {cluster}" if cluster else "")
    if init is None:
        init = f"""
  scf.if %leader {{
    nvgpu.mbarrier_init %full[%c0], 1 : {BAR}
    nvgpu.mbarrier_init %bar[%c0], {bar_count} : {BAR}
    nvgpu.fence_mbarrier_init
  }}
  nvgpu.cluster_sync"""
    return f"""
func.func @k(%A: memref<?x?xf32>, %X: memref<?x?xf32>, %Out: memref<?x?xf32>) attributes {{nvgpu.kernel = #nvgpu.kernel<{attr}>}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %buf = nvgpu.smem_alloc offset(0) : {BUF}
  %full = nvgpu.smem_alloc offset(512) : {BAR}
  %bar = nvgpu.smem_alloc offset(520) : {BAR}
  %tid = nvgpu.thread_id
  %rank = nvgpu.cluster_rank
  %cta = nvgpu.block_id 0
  %leader = arith.cmpi eq, %tid, %c0 : index
  %is0 = arith.cmpi eq, %rank, %c0 : index
  %is1 = arith.cmpi eq, %rank, %c1 : index
  %row = arith.muli %cta, %c8 : index
  %ta = nvgpu.tma_descriptor %A : memref<?x?xf32> -> {TILE}
  %tx = nvgpu.tma_descriptor %X : memref<?x?xf32> -> {TILE}
  %to = nvgpu.tma_descriptor %Out : memref<?x?xf32> -> {TILE}{init}
{body}
  func.return
}}
"""


def load(src: str, row: str, multicast: str = "", issuer: str = "%leader") -> str:
    """Thread 0 arms %full for one tile; `issuer` (a condition of thread 0)
    loads the tile at `row` of map `src` into %buf."""
    mc = f" multicast {multicast}" if multicast else ""
    return f"""
  scf.if %leader {{
    nvgpu.mbarrier_arrive_expect_tx %full[%c0], 512 : {BAR}
  }}
  scf.if {issuer} {{
    nvgpu.tma_load %{src}[%{row}, %c0], %buf[%c0], %full[%c0]{mc} : {TILE}, {BUF}, {BAR}
  }}"""


def store(dst: str, row: str, phase: str = "%c0") -> str:
    """Every thread waits for %full's phase `phase`; thread 0 stores %buf
    at `row` of map `dst`."""
    return f"""
  nvgpu.mbarrier_wait_parity %full[%c0], {phase} : {BAR}
  scf.if %leader {{
    nvgpu.tma_store %buf[%c0], %{dst}[%{row}, %c0] : {BUF}, {TILE}
    nvgpu.tma_store_wait 0
  }}"""


def copy(src: str, src_row: str, dst: str, dst_row: str, phase: str = "%c0") -> str:
    return load(src, src_row) + store(dst, dst_row, phase)


def run(body_or_src: str, ctas: int = 2, schedule: Schedule | None = None, rows: int | None = None, **kw):
    """Runs @k on `ctas` CTAs (grid x); returns (A, X, Out), `rows` rows of
    16 each (default 8 per CTA)."""
    src = body_or_src if "func.func" in body_or_src else kernel(body_or_src, **kw)
    rows = rows or 8 * ctas
    A = np.arange(rows * 16, dtype=np.float32).reshape(rows, 16) + 1
    X = np.zeros((rows, 16), np.float32)
    Out = np.zeros((rows, 16), np.float32)
    tawa.interpret(tawa.parse(src, "clusters.mlir"), "k", (ctas, 1, 1), A, X, Out, schedule=schedule)
    return A, X, Out


def error_of(body_or_src: str, ctas: int = 2, schedule: Schedule | None = None, **kw) -> str:
    with pytest.raises(TawaError) as info:
        run(body_or_src, ctas, schedule, **kw)
    text = str(info.value)
    assert "\n" not in text and "error:" in text, text
    return text


def tiles(array: np.ndarray) -> list[np.ndarray]:
    return [array[i : i + 8] for i in range(0, len(array), 8)]


# --------------------------------------------------------------------------- multicast


MULTICAST = load("ta", "row", multicast="3", issuer="%first") + store("to", "row") + "\n  nvgpu.cluster_sync"
"""Rank 0 loads its tile once for both CTAs of the cluster; each CTA stores
what landed in its own %buf at its own rows."""


def multicast_kernel(mask: str = "3") -> str:
    body = MULTICAST.replace("multicast 3", f"multicast {mask}")
    return kernel("  %first = arith.andi %leader, %is0 : i1" + body)


@pytest.mark.parametrize("schedule", SCHEDULES, ids=schedule_id)
def test_multicast_lands_in_both_ctas_and_completes_both_barriers(schedule: Schedule):
    A, _, Out = run(multicast_kernel(), ctas=4, schedule=schedule)
    # CTAs 0 and 1 (cluster 0) got rank 0's tile, the rows of CTA 0; CTAs 2
    # and 3 (cluster 1) the rows of CTA 2.
    a, out = tiles(A), tiles(Out)
    for cta, src in enumerate([0, 0, 2, 2]):
        np.testing.assert_array_equal(out[cta], a[src], err_msg=f"CTA {cta}")


def test_multicast_to_one_rank_leaves_the_other_waiting():
    """Mask 1: the box lands in rank 0 only, so rank 1's barrier, armed for
    512 bytes, never completes: a deadlock naming the CTA and its barrier."""
    text = error_of(multicast_kernel("1"), schedule=Schedule("producer-first"))
    assert "deadlock in @k cluster of CTAs (0, 0, 0) .. (1, 0, 0)" in text
    assert (
        "CTA (1, 0, 0) all 128 threads waits at nvgpu.mbarrier_wait_parity (clusters.mlir:" in text
        and "for barrier %full[0] (slot 0) to complete its phase of parity 0; it is in phase 0 "
        "(parity 0): 0 of 1 arrivals and 512 transaction bytes outstanding" in text
    ), text
    assert "CTA (0, 0, 0) all 128 threads waits at nvgpu.cluster_sync" in text


# --------------------------------------------------------------------------- remote arrivals


REMOTE_ARRIVE = """
  scf.if %leader {
    nvgpu.mbarrier_arrive %bar[%c0] cta(%c0) : !nvgpu.mbarrier<1>
  }
  scf.if %is0 {
    nvgpu.mbarrier_wait_parity %bar[%c0], %c0 : !nvgpu.mbarrier<1>
  }""" + copy("ta", "row", "to", "row") + "\n  nvgpu.cluster_sync"
"""Both ranks arrive on rank 0's %bar (2 arrivals; rank 0 names its own
rank), which rank 0 waits for before copying its tile."""


@pytest.mark.parametrize("schedule", SCHEDULES, ids=schedule_id)
def test_remote_arrivals_complete_the_peers_barrier_phase(schedule: Schedule):
    A, _, Out = run(REMOTE_ARRIVE, ctas=2, schedule=schedule, bar_count=2)
    np.testing.assert_array_equal(Out, A)


def test_an_arrival_without_cta_stays_local():
    """Rank 1's arrival made local lands on its own %bar: rank 0's still
    waits for one of its two arrivals."""
    body = REMOTE_ARRIVE.replace("cta(%c0) ", "")
    text = error_of(body, schedule=Schedule("producer-first"), bar_count=2)
    assert "deadlock" in text
    assert "CTA (0, 0, 0) all 128 threads waits at nvgpu.mbarrier_wait_parity" in text
    assert "for barrier %bar[0] (slot 0) to complete its phase of parity 0; it is in phase 0 (parity 0): 1 of 2 arrivals" in text


PER_LANE_ARRIVE = """
  %two = arith.cmpi ult, %tid, %c2 : index
  scf.if %two {
    nvgpu.mbarrier_arrive %bar[%c0] cta(%tid) : !nvgpu.mbarrier<1>
  }
  nvgpu.mbarrier_wait_parity %bar[%c0], %c0 : !nvgpu.mbarrier<1>""" + copy("ta", "row", "to", "row") + "\n  nvgpu.cluster_sync"
"""Thread t of each CTA arrives on the CTA of rank t (one op, a rank per
lane, as CUTLASS signals peers): each CTA's %bar gets one arrival from each
CTA of the cluster."""


@pytest.mark.parametrize("schedule", SCHEDULES, ids=schedule_id)
def test_lanes_arrive_on_the_ctas_they_name(schedule: Schedule):
    A, _, Out = run(PER_LANE_ARRIVE, ctas=4, schedule=schedule, bar_count=2)
    np.testing.assert_array_equal(Out, A)
    text = error_of(PER_LANE_ARRIVE, ctas=2, schedule=schedule, bar_count=3)
    assert "deadlock" in text and "2 of 3 arrivals" not in text and "1 of 3 arrivals" in text, text


HANDSHAKE = """
  scf.if %is1 {
    scf.if %leader {
      nvgpu.mbarrier_arrive %bar[%c0] cta(%c0) : !nvgpu.mbarrier<1>
    }
    nvgpu.mbarrier_wait_parity %bar[%c0], %c0 : !nvgpu.mbarrier<1>
  } else {
    nvgpu.mbarrier_wait_parity %bar[%c0], %c0 : !nvgpu.mbarrier<1>
    scf.if %leader {
      nvgpu.mbarrier_arrive %bar[%c0] cta(%c1) : !nvgpu.mbarrier<1>
    }
  }""" + copy("ta", "row", "to", "row")
"""Rank 1 signals rank 0, which answers; each copies its tile once its own
%bar has completed phase 0."""


@pytest.mark.parametrize("schedule", SCHEDULES, ids=schedule_id)
def test_a_handshake_between_ranks(schedule: Schedule):
    A, _, Out = run(HANDSHAKE + "\n  nvgpu.cluster_sync", ctas=4, schedule=schedule)
    np.testing.assert_array_equal(Out, A)


# --------------------------------------------------------------------------- cluster_sync


def ordered_copy(sync: bool) -> str:
    """Rank 1 copies its tile of A to X at rank 0's rows; (a cluster_sync;)
    rank 0 copies those rows of X to Out."""
    mid = "\n  nvgpu.cluster_sync" if sync else ""
    peer_row = "  %peer_row = arith.subi %row, %c8 : index\n"
    return (
        peer_row
        + "  scf.if %is1 {" + copy("ta", "row", "tx", "peer_row") + "\n  }"
        + mid
        + "\n  scf.if %is0 {" + copy("tx", "row", "to", "row") + "\n  }"
        + "\n  nvgpu.cluster_sync"
    )


@pytest.mark.parametrize("schedule", SCHEDULES, ids=schedule_id)
def test_cluster_sync_orders_a_write_before_a_read_across_ctas(schedule: Schedule):
    A, X, Out = run(ordered_copy(sync=True), ctas=4, schedule=schedule)
    a, x, out = tiles(A), tiles(X), tiles(Out)
    for c in (0, 2):  # rank 0 of each cluster got the tile of its rank 1
        np.testing.assert_array_equal(x[c], a[c + 1])
        np.testing.assert_array_equal(out[c], a[c + 1])
        assert not out[c + 1].any()


def test_without_cluster_sync_the_read_may_come_first():
    """The CTAs of a cluster really run concurrently: without the
    cluster_sync, the schedule that runs rank 0 first reads X before rank 1
    wrote it (zeros)."""
    _, X, Out = run(ordered_copy(sync=False), ctas=2, schedule=Schedule("consumer-first"))
    assert X[:8].any() and not Out.any()


def test_cluster_sync_that_a_cta_skips_is_a_deadlock():
    body = copy("ta", "row", "to", "row") + "\n  scf.if %is0 {\n    nvgpu.cluster_sync\n  }"
    text = error_of(body, schedule=Schedule("producer-first"))
    assert "deadlock in @k cluster of CTAs (0, 0, 0) .. (1, 0, 0)" in text
    assert "CTA (1, 0, 0) all 128 threads has finished" in text
    assert (
        "CTA (0, 0, 0) all 128 threads waits at nvgpu.cluster_sync (clusters.mlir:" in text
        and "for the 256 threads of the cluster (128 of 256 arrived)" in text
    ), text


FIRST_GROUP_SYNCS = """
  %wg = nvgpu.warp_group_id
  %first_wg = arith.cmpi eq, %wg, %c0 : index
  scf.if %first_wg {
    nvgpu.cluster_sync
  }"""
"""Only warp group 0 of each CTA reaches the cluster barrier."""


def test_cluster_sync_by_part_of_the_cta_is_a_deadlock():
    """The cluster barrier waits for every thread of the cluster: the second
    warp group of each CTA skipping it leaves 256 of 512 arrived."""
    text = error_of(FIRST_GROUP_SYNCS, threads=256, schedule=Schedule("consumer-first"))
    assert "deadlock" in text
    assert "CTA (1, 0, 0) warp group 0 waits at nvgpu.cluster_sync" in text
    assert "for the 512 threads of the cluster (256 of 512 arrived)" in text, text


# --------------------------------------------------------------------------- errors


def exit_race(final_sync: bool) -> str:
    """Rank 1 signals rank 0 and returns; rank 0 waits for it, then answers
    on rank 1's %bar: on the GPU that arrival may land after rank 1 is gone,
    unless both end with a cluster_sync."""
    return """
  scf.if %is1 {
    scf.if %leader {
      nvgpu.mbarrier_arrive %bar[%c0] cta(%c0) : !nvgpu.mbarrier<1>
    }
  } else {
    nvgpu.mbarrier_wait_parity %bar[%c0], %c0 : !nvgpu.mbarrier<1>
    scf.if %leader {
      nvgpu.mbarrier_arrive %bar[%c0] cta(%c1) : !nvgpu.mbarrier<1>
    }
  }""" + ("\n  nvgpu.cluster_sync" if final_sync else "")


@pytest.mark.parametrize("schedule", SCHEDULES, ids=schedule_id)
def test_missing_final_cluster_sync_is_an_arrival_into_an_exited_cta(schedule: Schedule):
    text = error_of(exit_race(final_sync=False), schedule=schedule)
    assert (
        "error: nvgpu.mbarrier_arrive from CTA (0, 0, 0) into CTA (1, 0, 0) (rank 1), which has already "
        "exited (undefined behaviour on the GPU): end the kernel with nvgpu.cluster_sync" in text
    ), text
    run(exit_race(final_sync=True), schedule=schedule)


@pytest.mark.parametrize("schedule", SCHEDULES, ids=schedule_id)
def test_multicast_into_an_exited_cta(schedule: Schedule):
    body = """
  scf.if %is1 {
    scf.if %leader {
      nvgpu.mbarrier_arrive %bar[%c0] cta(%c0) : !nvgpu.mbarrier<1>
    }
  } else {
    nvgpu.mbarrier_wait_parity %bar[%c0], %c0 : !nvgpu.mbarrier<1>""" + load("ta", "row", multicast="3") + store("to", "row") + """
  }"""
    text = error_of(body, schedule=schedule)
    assert (
        "error: nvgpu.tma_load from CTA (0, 0, 0) into CTA (1, 0, 0) (rank 1), which has already exited "
        "(undefined behaviour on the GPU): end the kernel with nvgpu.cluster_sync" in text
    ), text


@pytest.mark.parametrize("mask", ["1", "3"])
def test_a_tma_load_in_flight_at_the_end_of_a_cta_is_an_error(mask: str):
    """Rank 0 returns right after a multicast it did not wait for: the copy
    into itself is still in flight (rank 1 has not ended yet)."""
    body = "  %first = arith.andi %leader, %is0 : i1" + load("ta", "row", multicast=mask, issuer="%first")
    text = error_of(body, schedule=Schedule("producer-first"))
    assert "error: CTA (0, 0, 0) ends with 1 TMA load(s) in flight" in text, text


def test_arrival_on_a_rank_outside_the_cluster():
    body = """
  scf.if %leader {
    nvgpu.mbarrier_arrive %bar[%c0] cta(%c2) : !nvgpu.mbarrier<1>
  }"""
    text = error_of(body)
    assert text.startswith("clusters.mlir:")
    assert "error: nvgpu.mbarrier_arrive in CTA (0, 0, 0): CTA rank 2 is outside its cluster of 2 CTAs (ranks 0..1)" in text


def test_multicast_to_a_rank_outside_the_cluster():
    text = error_of(multicast_kernel("5"))
    assert "error: nvgpu.tma_load in CTA (0, 0, 0): multicast mask 0b101 names rank 2, outside its cluster of 2 CTAs (ranks 0..1)" in text


ONLY_RANK_0_INITIALISES = f"""
  %first = arith.andi %leader, %is0 : i1
  scf.if %first {{
    nvgpu.mbarrier_init %full[%c0], 1 : {BAR}
    nvgpu.mbarrier_init %bar[%c0], 1 : {BAR}
    nvgpu.fence_mbarrier_init
  }}"""
"""Rank 0 initialises its barriers; rank 1 never does, and no cluster_sync
follows (rank 1 waits at the kernel's final one)."""


def test_arrival_on_a_peer_barrier_not_initialised_yet():
    body = """
  scf.if %first {
    nvgpu.mbarrier_arrive %bar[%c0] cta(%c1) : !nvgpu.mbarrier<1>
  }
  nvgpu.cluster_sync"""
    text = error_of(body, init=ONLY_RANK_0_INITIALISES)
    assert (
        "error: nvgpu.mbarrier_arrive from CTA (0, 0, 0) into CTA (1, 0, 0) (rank 1) lands on its barrier %bar[0], "
        "which it has not initialised yet (initialise the barriers, then nvgpu.cluster_sync, before peers use them)"
        in text
    ), text
    # The same arrival on rank 0's own barrier, named by its rank, is fine.
    run(body.replace("cta(%c1)", "cta(%c0)"), init=ONLY_RANK_0_INITIALISES)


def test_multicast_onto_a_peer_barrier_not_initialised_yet():
    body = f"""
  scf.if %first {{
    nvgpu.mbarrier_arrive_expect_tx %full[%c0], 512 : {BAR}
    nvgpu.tma_load %ta[%row, %c0], %buf[%c0], %full[%c0] multicast 3 : {TILE}, {BUF}, {BAR}
  }}
  nvgpu.cluster_sync"""
    text = error_of(body, init=ONLY_RANK_0_INITIALISES)
    assert (
        "error: nvgpu.tma_load from CTA (0, 0, 0) into CTA (1, 0, 0) (rank 1) lands on its barrier %full[0], "
        "which it has not initialised yet" in text
    ), text


def test_grid_must_be_whole_clusters():
    with pytest.raises(InterpreterError) as info:
        run(multicast_kernel(), ctas=3)
    assert "error: @k runs in clusters of 2 CTAs along grid axis x: its grid x (3) must be a multiple of 2" in str(info.value)


def test_errors_are_simulation_errors_located_at_the_op():
    body = """
  scf.if %leader {
    nvgpu.mbarrier_arrive %bar[%c0] cta(%c2) : !nvgpu.mbarrier<1>
  }"""
    with pytest.raises(SimulationError) as info:
        run(body)
    src = kernel(body)
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "cta(%c2)" in text)
    assert str(info.value).startswith(f"clusters.mlir:{line}:")


# --------------------------------------------------------------------------- persistent kernels


PERSISTENT = """
  %gx = nvgpu.launch_grid 0
  %nctas = nvgpu.grid_dim 0
  %cluster = arith.divui %cta, %c2 : index
  %clusters = arith.divui %nctas, %c2 : index
  %gx1 = arith.addi %gx, %c1 : index
  %programs = arith.divui %gx1, %c2 : index
  %ph_end = scf.for %p = %cluster to %programs step %clusters iter_args(%ph = %c0) -> (index) {
    %x2 = arith.muli %p, %c2 : index
    %x = arith.addi %x2, %rank : index
    %dst = arith.muli %x, %c8 : index""" + copy("ta", "row", "to", "dst", phase="%ph").replace("\n", "\n  ") + """
    %next = arith.xori %ph, %c1 : index
    scf.yield %next : index
  }
  nvgpu.cluster_sync"""
"""A persistent cluster kernel: cluster q of the launch runs cluster programs
q, q + clusters, ...; program p covers programs 2p and 2p + 1 along x, one
per rank.  Each CTA writes the rows of its own block id of A (out of
bounds: dropped), so Out tells which CTA ran which program."""


@pytest.mark.parametrize("gx, ctas", [(5, None), (5, 1), (5, 3), (2, None), (1, None), (7, 2)])
def test_persistent_cluster_kernel_launches_whole_clusters(gx: int, ctas: int | None):
    n = persistent_ctas((gx, 1, 1), 2 * (ctas or DEFAULT_CTAS), 2)  # 4 for gx >= 3 by default: two clusters
    src = kernel(PERSISTENT)
    rows = 8 * max(gx, n)
    A = np.arange(rows * 16, dtype=np.float32).reshape(rows, 16) + 1
    Out = np.zeros((8 * gx, 16), np.float32)
    X = np.zeros_like(Out)
    tawa.interpret(tawa.parse(src, "clusters.mlir"), "k", (gx, 1, 1), A, X, Out, ctas=ctas)
    clusters = n // 2
    a = tiles(A)
    for x, got in enumerate(tiles(Out)):
        p, rank = divmod(x, 2)
        cta = 2 * (p % clusters) + rank
        np.testing.assert_array_equal(got, a[cta], err_msg=f"program {x}")


# --------------------------------------------------------------------------- without clusters


@pytest.mark.parametrize("schedule", SCHEDULES[:3], ids=schedule_id)
def test_a_kernel_without_clusters_is_unchanged(schedule: Schedule):
    """No `cluster`: every CTA is rank 0 of a cluster of one, runs alone,
    multicasts to itself (mask 1) and cluster_sync syncs its threads."""
    src = kernel("  %first = arith.andi %leader, %is0 : i1" + MULTICAST.replace("multicast 3", "multicast 1"), cluster=None)
    A, _, Out = run(src, ctas=3, schedule=schedule)
    np.testing.assert_array_equal(Out, A)


def test_without_clusters_a_peer_rank_is_outside():
    src = kernel("  %first = arith.andi %leader, %is0 : i1" + MULTICAST, cluster=None)
    text = error_of(src)
    assert "multicast mask 0b11 names rank 1, outside its cluster of 1 CTA (ranks 0..0)" in text


def test_without_clusters_cluster_sync_syncs_the_cta():
    """Messages name tasks as before (no CTA prefix) and count the CTA's
    threads."""
    text = error_of(FIRST_GROUP_SYNCS, cluster=None, threads=256, schedule=Schedule("consumer-first"))
    assert "deadlock in @k CTA (0, 0, 0): warp group 0 waits at nvgpu.cluster_sync" in text, text
    assert "for the 256 threads of the CTA (128 of 256 arrived); warp group 1 has finished" in text, text
