"""tawa.cache: the cache directory and the store of proved facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tawa.cache import ProofStore, cache_dir


@pytest.fixture
def checker(tmp_path: Path) -> Path:
    path = tmp_path / "checker.py"
    path.write_text("def prove(): return True\n")
    return path


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("TAWA_CACHE_DIR")
    assert cache_dir() == Path.home() / ".cache" / "tawa"


def test_a_proof_is_seen_by_the_next_store_until_the_checker_changes(monkeypatch, tmp_path, checker):
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path / "cache"))
    key = ((("arrive", 0, None, 1),), 2, 200000)
    first = ProofStore("protocol", [checker])
    assert key not in first
    first.add(key)
    assert key in ProofStore("protocol", [checker])        # another process, same checker
    assert (key[0], 3, key[2]) not in ProofStore("protocol", [checker])  # another key
    assert key not in ProofStore("other", [checker])        # another kind of fact
    checker.write_text("def prove(): return False\n")      # the checker changed: nothing is trusted
    assert key not in ProofStore("protocol", [checker])
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_the_store_can_be_turned_off_and_survives_an_unwritable_directory(monkeypatch, tmp_path, checker):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TAWA_CACHE_DIR", str(blocker))
    store = ProofStore("protocol", [checker])
    store.add("k")  # cannot be written: nothing is remembered, nothing raised
    assert "k" not in store
    monkeypatch.setenv("TAWA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TAWA_PROOF_CACHE", "0")
    store.add("k")
    assert "k" not in store and not (tmp_path / "cache").exists()
