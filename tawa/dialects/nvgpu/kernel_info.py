"""`#nvgpu.kernel<...>`: what a lowered kernel needs at launch, as one verified attribute.

The passes below the aref level record, on the kernel's `func.func`, the
facts the PTX printer and the runtime need (the calling convention,
`tawa.backend.ptx.abi`), each pass the fields it decides:

* `smem`: bytes of dynamic shared memory, alignment slack included
  (`tawa-lower-aref`, from the shared-memory plan);
* `threads`: threads per CTA, and `regs`: the `setmaxnreg` budget of each
  warp group in order (`tawa-materialize-partitions`);
* `maxnreg`: registers per thread the CTA starts with (the PTX entry's
  `.maxnreg`), and `ctas_per_sm`: the CTAs one SM holds at once with it
  (`tawa-occupancy`; left out: the register file shared out over `threads`,
  `launch_register_cap`, and one CTA per SM); the runtime launches a
  persistent kernel's CTAs `ctas_per_sm` to an SM;
* `persistent`: the kernel loops over the logical grid, so the runtime
  launches min(programs, SMs) CTAs (`tawa-persistent`);
* `cluster`: CTAs per thread-block cluster along grid axis x (`tawa-cluster`;
  left out: 1, no clusters); the PTX declares it (`.reqnctapercluster`) and
  the runtime launches a multiple of it;
* `waits`: the watchdog's wait table (`tawa-bound-waits`): entry i
  describes the bounded `nvgpu.mbarrier_wait_parity` with `wait_id` i as
  (source location, role of its warp groups or "", barrier array); a kernel
  with entries takes a watchdog buffer parameter (`tawa.backend.ptx.abi`).

Syntax: `#nvgpu.kernel<threads = 384, smem = 197696, regs = [40, 232, 232], persistent, cluster = 2,
waits = [["gemm.mlir:19:5", "producer", "mbarrier<4> at shared offset 197664"]]>`,
`#nvgpu.kernel<threads = 128, smem = 1024, regs = [168], maxnreg = 168, ctas_per_sm = 3, persistent>`
(fields not decided yet are left out).  The verifier checks the fields
against the hardware (tawa.target.hopper).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from tawa.target.hopper import (
    MAX_CLUSTER_SIZE,
    MAX_CTAS_PER_SM,
    MAX_REGS,
    MAX_REGS_PER_THREAD,
    MAX_SMEM_BYTES,
    MAX_THREADS_PER_CTA,
    MIN_REGS,
    REGISTER_FILE_SIZE,
    REGS_GRANULE,
    SMEM_ALIGN_SLACK,
    THREADS_PER_GROUP,
    launch_register_cap,
    resident_ctas,
)

KERNEL_ATTR = "nvgpu.kernel"
"""The name of the attribute on a lowered kernel's `func.func`."""


@dataclass(frozen=True)
class KernelInfo:
    """The launch facts of a kernel; None (or False) where not decided yet."""

    threads: int | None = None
    smem: int | None = None
    regs: tuple[int, ...] | None = None
    persistent: bool = False
    waits: tuple[tuple[str, str, str], ...] = ()
    """The watchdog's wait table: (location, role, barrier) per wait id."""
    cluster: int = 1
    """CTAs per thread-block cluster (along grid axis x)."""
    maxnreg: int | None = None
    """Registers per thread at launch (`.maxnreg`); None: `launch_register_cap(threads)`."""
    ctas_per_sm: int = 1
    """CTAs the kernel's resources were budgeted for on one SM."""

    @property
    def launch_regs(self) -> int:
        """Registers per thread the CTA starts with: `maxnreg`, or where it
        was not decided the register file shared out over `threads`."""
        assert self.threads is not None, "threads not decided yet"
        return self.maxnreg or launch_register_cap(self.threads)


@irdl_attr_definition
class KernelInfoAttr(ParametrizedAttribute):
    """Launch facts of a lowered kernel (see the module docstring).

    Syntax: `#nvgpu.kernel<threads = 384, smem = 197696, regs = [40, 232, 232], persistent>`
    """

    name = "nvgpu.kernel"
    threads: IntAttr  # 0: not decided
    smem: IntAttr  # -1: not decided
    regs: ArrayAttr[IntAttr]  # empty: not decided
    persistent: IntAttr  # 0 or 1
    waits: ArrayAttr[ArrayAttr[StringAttr]]  # empty: no watchdog
    cluster: IntAttr  # 1: no clusters
    maxnreg: IntAttr  # 0: not decided
    ctas_per_sm: IntAttr  # 1: one CTA per SM

    def __init__(self, info: KernelInfo):
        super().__init__(
            IntAttr(info.threads or 0),
            IntAttr(-1 if info.smem is None else info.smem),
            ArrayAttr(IntAttr(r) for r in (info.regs or ())),
            IntAttr(int(info.persistent)),
            ArrayAttr(ArrayAttr(StringAttr(s) for s in w) for w in info.waits),
            IntAttr(info.cluster),
            IntAttr(info.maxnreg or 0),
            IntAttr(info.ctas_per_sm),
        )

    @property
    def info(self) -> KernelInfo:
        regs = tuple(r.data for r in self.regs.data)
        return KernelInfo(
            self.threads.data or None,
            None if self.smem.data < 0 else self.smem.data,
            regs or None,
            bool(self.persistent.data),
            tuple(tuple(s.data for s in w.data) for w in self.waits.data),
            self.cluster.data,
            self.maxnreg.data or None,
            self.ctas_per_sm.data,
        )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        fields: dict = {}
        with parser.in_angle_brackets():
            while True:
                pos = parser.pos
                key = parser.parse_identifier()
                if key in fields:
                    parser.raise_error(f"#nvgpu.kernel field '{key}' given twice", pos)
                if key == "persistent":
                    fields[key] = True
                elif key in ("threads", "smem", "cluster", "maxnreg", "ctas_per_sm"):
                    parser.parse_punctuation("=")
                    fields[key] = parser.parse_integer(allow_boolean=False, allow_negative=False)
                elif key == "regs":
                    parser.parse_punctuation("=")
                    fields[key] = tuple(parser.parse_comma_separated_list(
                        parser.Delimiter.SQUARE, lambda: parser.parse_integer(allow_boolean=False)
                    ))
                elif key == "waits":
                    parser.parse_punctuation("=")
                    fields[key] = tuple(parser.parse_comma_separated_list(
                        parser.Delimiter.SQUARE, lambda: _parse_wait(parser)
                    ))
                else:
                    parser.raise_error(
                        f"unknown #nvgpu.kernel field '{key}' (threads, smem, regs, maxnreg, ctas_per_sm, persistent, "
                        "cluster) or waits", pos
                    )
                if parser.parse_optional_punctuation(",") is None:
                    break
        attr = cls(KernelInfo(**fields))
        return attr.parameters

    def print_parameters(self, printer: Printer) -> None:
        info, parts = self.info, []
        if info.threads is not None:
            parts.append(f"threads = {info.threads}")
        if info.smem is not None:
            parts.append(f"smem = {info.smem}")
        if info.regs is not None:
            parts.append(f"regs = [{', '.join(map(str, info.regs))}]")
        if info.maxnreg is not None:
            parts.append(f"maxnreg = {info.maxnreg}")
        if info.ctas_per_sm != 1:
            parts.append(f"ctas_per_sm = {info.ctas_per_sm}")
        if info.persistent:
            parts.append("persistent")
        if info.cluster != 1:
            parts.append(f"cluster = {info.cluster}")
        if info.waits:
            table = ", ".join("[" + ", ".join(json.dumps(s, ensure_ascii=False) for s in w) + "]" for w in info.waits)
            parts.append(f"waits = [{table}]")
        printer.print_string(f"<{', '.join(parts)}>")

    def verify(self) -> None:
        info = self.info
        if not 1 <= info.cluster <= MAX_CLUSTER_SIZE:
            raise VerifyException(
                f"#nvgpu.kernel cluster must be 1 to {MAX_CLUSTER_SIZE} CTAs, got {info.cluster}"
            )
        if info.threads is not None and (info.threads % THREADS_PER_GROUP or info.threads > MAX_THREADS_PER_CTA):
            raise VerifyException(
                f"#nvgpu.kernel threads must be whole warp groups of {THREADS_PER_GROUP}, at most "
                f"{MAX_THREADS_PER_CTA}, got {info.threads}"
            )
        if info.smem is not None and info.smem > MAX_SMEM_BYTES:
            raise VerifyException(
                f"#nvgpu.kernel smem = {info.smem} bytes is more than the {MAX_SMEM_BYTES} a CTA may use "
                f"(alignment slack of {SMEM_ALIGN_SLACK} included)"
            )
        if info.regs is not None:
            bad = [r for r in info.regs if not MIN_REGS <= r <= MAX_REGS or r % REGS_GRANULE]
            if bad:
                raise VerifyException(
                    f"#nvgpu.kernel regs must be multiples of {REGS_GRANULE} in [{MIN_REGS}, {MAX_REGS}], got {bad}"
                )
            if info.threads is not None and len(info.regs) != info.threads // THREADS_PER_GROUP:
                raise VerifyException(
                    f"#nvgpu.kernel needs one register budget per warp group: {info.threads // THREADS_PER_GROUP}, "
                    f"got {len(info.regs)}"
                )
            total = sum(info.regs) * THREADS_PER_GROUP
            pool = info.launch_regs * info.threads if info.threads else REGISTER_FILE_SIZE
            if total > pool:
                raise VerifyException(
                    f"#nvgpu.kernel register budgets oversubscribe the registers the CTA holds at launch: "
                    f"{total} > {pool}"
                )
        if info.maxnreg is not None and not (MIN_REGS <= info.maxnreg <= MAX_REGS_PER_THREAD
                                             and info.maxnreg % REGS_GRANULE == 0):
            raise VerifyException(f"#nvgpu.kernel maxnreg must be a multiple of {REGS_GRANULE} in "
                                  f"[{MIN_REGS}, {MAX_REGS_PER_THREAD}], got {info.maxnreg}")
        if not 1 <= info.ctas_per_sm <= MAX_CTAS_PER_SM:
            raise VerifyException(f"#nvgpu.kernel ctas_per_sm must be 1 to {MAX_CTAS_PER_SM}, got {info.ctas_per_sm}")
        if info.ctas_per_sm > 1:
            if info.threads is None:
                raise VerifyException("#nvgpu.kernel ctas_per_sm needs threads")
            fit = resident_ctas(info.threads, info.launch_regs, info.smem or 0)
            if info.ctas_per_sm > fit:
                raise VerifyException(
                    f"#nvgpu.kernel ctas_per_sm = {info.ctas_per_sm} CTAs do not fit an SM: {fit} of "
                    f"{info.threads} threads at {info.launch_regs} registers and {info.smem or 0} bytes of "
                    "shared memory do"
                )


def _parse_wait(parser: AttrParser) -> tuple[str, str, str]:
    pos = parser.pos
    entry = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_str_literal)
    if len(entry) != 3:
        parser.raise_error("a #nvgpu.kernel wait is [location, role, barrier]", pos)
    return (entry[0], entry[1], entry[2])


def kernel_info(kernel: func.FuncOp) -> KernelInfo:
    """The launch facts recorded on `kernel` so far (all undecided if none)."""
    attr = kernel.attributes.get(KERNEL_ATTR)
    return attr.info if isinstance(attr, KernelInfoAttr) else KernelInfo()


def record_kernel_info(kernel: func.FuncOp, **fields) -> None:
    """Records (or overrides) some fields of `kernel`'s launch facts."""
    kernel.attributes[KERNEL_ATTR] = KernelInfoAttr(replace(kernel_info(kernel), **fields))


def persistent_ctas(grid: tuple[int, int, int], slots: int, cluster: int = 1) -> int:
    """The CTAs a persistent kernel launches over logical `grid` when `slots`
    of them fit on the device at once (one per SM): one per program up to
    `slots`, or with clusters of `cluster` CTAs, whole clusters, one per
    cluster program (each runs `cluster` programs side by side along x, so
    there are ceil(gx / cluster) · gy · gz of them; `tawa-cluster`), at most
    `slots // cluster` and at least one."""
    gx, gy, gz = grid
    programs = -(-gx // cluster) * gy * gz
    return cluster * max(1, min(programs, slots // cluster))
