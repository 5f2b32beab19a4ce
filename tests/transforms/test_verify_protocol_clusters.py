"""tawa-verify-protocol on kernels with thread-block clusters: the clustered
GEMMs (`tawa-hopper-pipeline{cluster=2}`) are proved; each way of breaking
the cluster protocol that the lowering must avoid is rejected with the
violation it causes (an empty barrier counting only local releases, a
missing remote release, no `cluster_sync` before the exit, a CTA-local
barrier instead of `cluster_sync` after the inits); and on random 2-CTA
protocols with multicast loads and remote arrivals, the reduced search
(with the fine footprints it uses in a cluster) agrees with the full one."""

from __future__ import annotations

import random
import re
from functools import cache

import pytest
from example_cases import EXAMPLES
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr

import tawa
from tawa.diagnostics import TawaError
from tawa.transforms.hopper_pipeline import HopperPipelinePass
from tawa.verify.protocol_model import ARRIVE, EXPECT_TX, INIT, NAMED_SYNC, READ, TMA, WAIT, Event
from tawa.verify.protocol_search import Explorer, Layout
from tawa.verify.verify_protocol import VerifyProtocolPass


@cache
def _cluster_gemm() -> str:
    """examples/gemm.mlir lowered with 2-CTA clusters, before the verifier."""
    module = tawa.parse((EXAMPLES / "gemm.mlir").read_text(), "gemm.mlir")
    pipeline = HopperPipelinePass(prepare=False, cluster=2)
    ctx = tawa.context()
    pipeline.specialize_pass().apply(ctx, module)
    for step in pipeline.planned_steps(module):
        if step.name != VerifyProtocolPass.name:
            step.apply(ctx, module)
    return str(module)


def _verify(text: str, name: str = "cluster_gemm.mlir") -> None:
    VerifyProtocolPass().apply(tawa.context(), tawa.parse(text, name))


@pytest.mark.slow
@pytest.mark.parametrize("example", ["gemm", "gemm_fp8", "batched_gemm"])
def test_clustered_gemms_are_proved(example: str, monkeypatch):
    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    module = tawa.parse((EXAMPLES / f"{example}.mlir").read_text(), f"{example}.mlir")
    HopperPipelinePass(prepare=False, cluster=2).apply(tawa.context(), module)  # verifies


def _drop(pattern: str):
    """A mutation that deletes every line matching `pattern`."""
    def mutate(text: str) -> str:
        return "\n".join(line for line in text.split("\n") if not re.search(pattern, line))
    return mutate


def _remote_arrivals_to_one_rank(text: str) -> str:
    """Drop the second of each pair of remote arrivals (to the peer)."""
    lines = text.split("\n")
    return "\n".join(line for i, line in enumerate(lines)
                     if not ("mbarrier_arrive" in line and "cta(" in line and "cta(" in lines[i - 1]))


def _first_cluster_sync_local(text: str) -> str:
    return text.replace("nvgpu.cluster_sync", "nvgpu.named_barrier_sync 0, 384", 1)


def _last_cluster_sync_dropped(text: str) -> str:
    head, _, tail = text.rpartition("nvgpu.cluster_sync\n")
    return head + tail


MUTATIONS = {
    # Each empty barrier counts the releases of its own CTA's consumers
    # only: a peer's release completes a phase early and the producer
    # overwrites a stage the other CTA still reads.
    "local_empty_count": (lambda t: re.sub(r"(mbarrier_init %\d+\[%\d+\]), 4", r"\1, 2", t),
                          "read during load"),
    "missing_remote_release": (_remote_arrivals_to_one_rank, "deadlock"),
    "no_cluster_sync_at_exit": (_last_cluster_sync_dropped, "CTA exits while a peer may still access it"),
    "cta_barrier_after_init": (_first_cluster_sync_local, "peer barrier used before init"),
}


@pytest.mark.parametrize("name", [n if n == "cta_barrier_after_init" else pytest.param(n, marks=pytest.mark.slow)
                                  for n in MUTATIONS])
def test_broken_cluster_protocols_are_rejected(name: str, monkeypatch):
    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    mutate, problem = MUTATIONS[name]
    text = _cluster_gemm()
    broken = mutate(text)
    assert broken != text
    with pytest.raises(TawaError) as info:
        _verify(broken)
    err = info.value
    assert err.where.startswith("cluster_gemm.mlir:")
    assert err.message.startswith(f"tawa-verify-protocol: {problem} in @gemm (")
    assert "2 CTAs per cluster" in err.message
    assert re.match(r"cluster_gemm\.mlir:\d+:\d+: note: counterexample \(", err.details[0]), err.details[0]
    assert re.match(r"cluster_gemm\.mlir:\d+:\d+: note:   1\. cta0\.wg0 mbarrier_init ", err.details[1])


# --------------------------------------------------------------------------- the search


def _ev(kind: str, barrier: int = -1, **fields) -> Event:
    return Event(kind, arith.ConstantOp(IntegerAttr(0, IndexType())), barrier, **fields)


CLUSTER_SYNC = -1
THREADS = 256  # two warp groups per CTA


def _random_cluster_protocol(rng: random.Random) -> tuple[list[list[Event]], Layout]:
    """Two CTAs, each a producer (role 2c) and a consumer (role 2c + 1),
    with a 1-stage ring: barrier 2c is CTA c's full barrier, 2c + 1 its
    empty barrier counting both CTAs' consumers; stage 2c + h is half h of
    CTA c's stage; producer c loads half c into both CTAs (a multicast:
    one TMA event per destination), each consumer reads both halves of its
    CTA's stage and releases it on both CTAs.  Now and
    then an event is dropped, a count or a transaction size changed, or the
    first or the last cluster_sync left out."""
    def sometimes(p: float) -> bool:
        return rng.random() < p

    sync = [_ev(NAMED_SYNC, CLUSTER_SYNC, count=2 * THREADS, threads=128)]
    traces: list[list[Event]] = []
    trips = rng.randint(1, 2)
    start = sync if sometimes(0.9) else []  # the cluster_sync after the inits
    for c in (0, 1):
        full, empty, peer = 2 * c, 2 * c + 1, 1 - c
        producer = [_ev(INIT, full, count=1),
                    _ev(INIT, empty, count=2 if sometimes(0.9) else 1), *start]
        consumer = [*start]
        for i in range(trips):
            if i > 0 and sometimes(0.95):
                producer.append(_ev(WAIT, empty, parity=(i - 1) % 2))
            producer.append(_ev(EXPECT_TX, full, count=1, tx=128 if sometimes(0.95) else 64))
            for dest in (c, peer):
                if sometimes(0.97):
                    producer.append(_ev(TMA, 2 * dest, slot=2 * dest + c, tx=64, count=1))
            if sometimes(0.95):
                consumer.append(_ev(WAIT, full, parity=i % 2))
            consumer += [_ev(READ, slot=2 * c), _ev(READ, slot=2 * c + 1)]
            for dest in (c, peer):
                if sometimes(0.95):
                    consumer.append(_ev(ARRIVE, 2 * dest + 1, count=1))
        if sometimes(0.9):
            producer += sync
            consumer += sync
        traces += [producer, consumer]
    halves = tuple((cta, 64 * half, 64 * half + 64) for cta in (0, 1) for half in (0, 1))
    return traces, Layout(role_cta=(0, 0, 1, 1), barrier_cta=(0, 0, 1, 1), slot_range=halves)


def _cluster_explorer(traces, layout: Layout, **options) -> Explorer:
    return Explorer(traces, 4, str, str, str, max_states=200_000, layout=layout, shortest=False, **options)


@pytest.mark.slow
def test_the_reduced_search_agrees_with_the_full_search_on_random_cluster_protocols():
    rng = random.Random(5)
    found = set()
    for _ in range(60):
        traces, layout = _random_cluster_protocol(rng)
        full = _cluster_explorer(traces, layout, reduce=False)
        violation = full.run()
        for fine in (True, False):
            reduced = _cluster_explorer(traces, layout, fine=fine)
            assert (reduced.run() is None) == (violation is None)
            if violation is None:
                assert 0 < reduced.states <= full.states
        found.add(violation.problem if violation else "none")
    assert "none" in found
    assert {"CTA exits while a peer may still access it", "wait before init", "deadlock",
            "read during load"} <= found
