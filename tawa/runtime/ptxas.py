"""PTX → cubin with `ptxas`, cached on disk.

The driver's PTX JIT is slow (seconds for a large module) and is paid again
by every process; a cubin loads at once.  `assemble(ptx, name)` runs

    ptxas -arch=sm_90a -v -o NAME.cubin NAME.ptx

once per distinct (PTX text, ptxas version, arch) and keeps the result under
the cache directory, `$TAWA_CACHE_DIR` or `~/.cache/tawa`:

    <cache>/<arch>/<sha256 of ptx, ptxas version, arch>/NAME.{ptx,cubin,log}

`NAME.log` holds `ptxas -v`'s report (registers, spills, shared memory).
Files are written under temporary names and renamed, so concurrent processes
can share the cache.  Needs no GPU.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tawa.cache import cache_dir
from tawa.diagnostics import TawaError
from tawa.target.hopper import ARCH


class AssembleError(TawaError):
    """ptxas is missing or rejected a kernel."""

    def __init__(self, message: str, where: str = "tawa.assemble"):
        super().__init__(message, where)


class RegisterSpillWarning(UserWarning):
    """ptxas spilled registers of a kernel to local memory.  The kernel is
    correct but slower; `tawa-check-resources` lets through kernels whose
    register estimate is within its error of the budget, and ptxas decides
    those (docs/passes.md)."""


class SerializedWgmmaWarning(UserWarning):
    """ptxas waits for wgmma itself in a kernel: every wgmma of it serialized
    (C7513: an instruction defines a register operand of a wgmma group in
    flight) or a wait injected before a use of registers that one in flight
    defines (C7517).  The kernel is correct, but what the pipeline overlapped
    runs in turn; the compiler's tests fail on both (docs/passes.md,
    `tawa-overlap-dots`, "Waits")."""


SERIALIZED_WGMMA = re.compile(r"\((C7513|C7517)\)")
"""ptxas's notes that it waits for wgmma itself (`SerializedWgmmaWarning`)."""


@dataclass(frozen=True)
class Cubin:
    path: Path
    """The assembled `.cubin`."""
    ptx_path: Path
    log: str
    """What `ptxas -v` reported."""
    cached: bool
    """Found in the cache (ptxas did not run)."""

    @property
    def spill_bytes(self) -> int:
        """Bytes of spill stores that `ptxas -v` reported, over the kernels of the cubin."""
        return sum(int(n) for n in re.findall(r"(\d+) bytes spill stores", self.log))

    @property
    def serialized_wgmma(self) -> tuple[str, ...]:
        """The notes (`C7513`, `C7517`) by which ptxas said it waits for
        wgmma itself, each once, in the order of the log."""
        return tuple(dict.fromkeys(SERIALIZED_WGMMA.findall(self.log)))


def find_ptxas() -> str:
    """`$TAWA_PTXAS`, else `ptxas` on PATH, else `$CUDA_HOME/bin/ptxas`."""
    env = os.environ.get("TAWA_PTXAS")
    if env:
        return env
    found = shutil.which("ptxas")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "ptxas").is_file():
            return str(Path(home) / "bin" / "ptxas")
    raise AssembleError("ptxas not found (needed to assemble kernels): put it on PATH or set TAWA_PTXAS")


@functools.lru_cache(maxsize=8)
def ptxas_version(ptxas: str) -> str:
    """The version line of `ptxas --version` (e.g. `Cuda compilation tools,
    release 13.0, V13.0.88`)."""
    try:
        out = subprocess.run([ptxas, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise AssembleError(f"cannot run {ptxas} --version: {err}") from None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    release = [line for line in lines if "release" in line]
    return (release or lines or ["unknown"])[-1]


def cache_key(ptx: str, version: str, arch: str = ARCH) -> str:
    h = hashlib.sha256()
    for part in (ptx, version, arch):
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def first_error(output: str) -> str:
    """The first error line of ptxas's output, whitespace normalised."""
    lines = [" ".join(line.split()) for line in output.splitlines() if line.strip()]
    for pattern in (r"\berror\b", r"\bfatal\b"):
        for line in lines:
            if re.search(pattern, line, re.IGNORECASE):
                return line
    return lines[0] if lines else "no output"


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def assemble(ptx: str, name: str, arch: str = ARCH) -> Cubin:
    """The cubin of `ptx` (kernel `name` names the files), from the cache or
    by running ptxas.  AssembleError carries ptxas's first error line."""
    ptxas = find_ptxas()
    key = cache_key(ptx, ptxas_version(ptxas), arch)
    folder = cache_dir() / arch / key
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "kernel"
    cubin, ptx_path, log_path = (folder / f"{safe}{ext}" for ext in (".cubin", ".ptx", ".log"))
    if cubin.is_file():
        log = log_path.read_text() if log_path.is_file() else ""
        return Cubin(cubin, ptx_path, log, cached=True)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not ptx_path.is_file():
            _write_atomic(ptx_path, ptx.encode())
    except OSError as err:
        raise AssembleError(f"cannot write to the kernel cache {folder}: {err.strerror}") from None
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{safe}.", suffix=".cubin")
    os.close(fd)
    try:
        proc = subprocess.run(
            [ptxas, f"-arch={arch}", "-v", "-o", tmp, str(ptx_path)],
            capture_output=True,
            text=True,
        )
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            line = first_error(log).replace(str(ptx_path), ptx_path.name)
            raise AssembleError(f"ptxas rejected the PTX of @{name}: {line} (PTX kept at {ptx_path})")
        os.replace(tmp, cubin)
    finally:
        Path(tmp).unlink(missing_ok=True)
    _write_atomic(log_path, log.encode())
    return Cubin(cubin, ptx_path, log, cached=False)
