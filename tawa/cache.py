"""tawa's on-disk cache directory, and a store of facts proved once.

`cache_dir()` is `$TAWA_CACHE_DIR`, else `~/.cache/tawa` (read on every
call): assembled cubins (`tawa.runtime.ptxas`), autotuned configurations
(`tawa.runtime.autotune`) and protocol proofs (`ProofStore`) live below it.

`ProofStore(kind, checker_files)` remembers facts that cost seconds to
establish and depend only on a key and on the code that establishes them:
`tawa-verify-protocol` stores every protocol it proved, so the next process
compiling the same kernel (another `tawa-opt` run, another test worker) does
not explore it again.  A fact's file name is the SHA-256 of the key's `repr`
and of the checker's source files, so editing the checker invalidates every
stored proof.  Only facts are stored, never failures; files are written
under a temporary name and renamed, so concurrent processes can share the
directory; an unwritable directory just means nothing is remembered.
`$TAWA_PROOF_CACHE=0` turns the store off.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """`$TAWA_CACHE_DIR`, else `~/.cache/tawa` (read on every call)."""
    env = os.environ.get("TAWA_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tawa"


class ProofStore:
    """Facts of one kind, keyed by a `repr`-stable key (module docstring)."""

    def __init__(self, kind: str, checker_files: Sequence[Path]):
        self.kind = kind
        digest = hashlib.sha256()
        for path in checker_files:
            digest.update(Path(path).read_bytes())
        self._checker = digest.hexdigest()

    def _path(self, key: Any) -> Path:
        name = hashlib.sha256(f"{self._checker}\n{key!r}".encode()).hexdigest()
        return cache_dir() / self.kind / name[:2] / name

    @staticmethod
    def enabled() -> bool:
        return os.environ.get("TAWA_PROOF_CACHE", "1") != "0"

    def __contains__(self, key: Any) -> bool:
        return self.enabled() and self._path(key).is_file()

    def add(self, key: Any) -> None:
        if not self.enabled():
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(self.kind + "\n")
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only or full cache only costs the next process time
