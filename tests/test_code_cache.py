"""tawa.code_cache: dataclass methods compiled once and kept between processes."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import types

import pytest

from tawa import code_cache


def _run(code: str, cache: str, **env: str) -> str:
    full = {**os.environ, "TAWA_CACHE_DIR": cache}
    full.pop("TAWA_CODE_CACHE", None)
    full.update(env)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def _cache_file(cache) -> str:
    (name,) = os.listdir(os.path.join(cache, "code"))
    return os.path.join(cache, "code", name)


def test_kept_between_processes(tmp_path):
    cache = str(tmp_path)
    first = _run("import tawa.tools.tawa_opt, tawa.code_cache as c; print(c._added)", cache)
    assert int(first) > 100  # xDSL's and tawa's dataclasses, compiled and kept
    before = os.stat(_cache_file(cache)).st_mtime_ns
    second = _run("import tawa.tools.tawa_opt, tawa.code_cache as c; print(c._added, len(c._table))", cache)
    added, size = map(int, second.split())
    assert added == 0 and size >= int(first)  # every text found: nothing compiled, nothing written
    assert os.stat(_cache_file(cache)).st_mtime_ns == before


def test_unreadable_file_is_an_empty_table(tmp_path):
    cache = str(tmp_path)
    os.makedirs(tmp_path / "code")
    _run("import tawa", cache)
    path = _cache_file(cache)
    with open(path, "wb") as f:
        f.write(b"\x00not marshal")
    out = _run("import tawa.tools.tawa_opt, tawa.code_cache as c; print(c._added)", cache)
    assert int(out) > 100  # compiled again and the file rewritten
    assert code_cache._load(path)


def test_switched_off(tmp_path):
    out = _run("import dataclasses, tawa; print(hasattr(dataclasses, 'exec'))", str(tmp_path), TAWA_CODE_CACHE="0")
    assert out == "False"
    assert not (tmp_path / "code").exists()


def _make_class(module_name: str):
    """A frozen dataclass with defaults, defined as if in `module_name`."""
    module = types.ModuleType(module_name)
    sys.modules[module_name] = module
    try:
        exec(textwrap.dedent("""
            from dataclasses import dataclass, field

            @dataclass(frozen=True, order=True)
            class Point:
                x: int
                y: int = 2
                tags: tuple = field(default_factory=tuple)
        """), module.__dict__)
        return module.Point
    finally:
        del sys.modules[module_name]


@pytest.mark.parametrize("module_name", ["tawa._code_cache_probe", "elsewhere_code_cache_probe"])
def test_same_class_either_way(module_name, monkeypatch):
    monkeypatch.setattr(code_cache, "_table", {})
    monkeypatch.setattr(code_cache, "_added", 0)
    monkeypatch.setattr(dataclasses, "exec", code_cache._exec, raising=False)
    cls = _make_class(module_name)
    kept = len(code_cache._table)
    assert kept > 0 if module_name.startswith("tawa.") else kept == 0  # only tawa's and xDSL's are kept
    again = _make_class(module_name)  # from the table, if kept
    for c in (cls, again):
        p = c(1)
        assert (p, repr(p), p < c(1, 3), hash(p) == hash(c(1))) == (c(1, 2, ()), "Point(x=1, y=2, tags=())", True, True)
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 3
