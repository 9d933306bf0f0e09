"""Atomic writes and the cache folder."""

import os

from placerl._io import CACHE_ENV, atomic_write_text, cache_root


def test_atomic_write_creates_folders_and_leaves_no_temporary_file(tmp_path):
    path = atomic_write_text(tmp_path / "a" / "b.json", "[1]")
    assert path.read_text() == "[1]"
    atomic_write_text(path, "[2]")
    assert path.read_text() == "[2]" and os.listdir(path.parent) == ["b.json"]


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert cache_root() == tmp_path
    monkeypatch.delenv(CACHE_ENV)
    assert str(cache_root()).endswith(".cache/placerl")


def test_the_test_session_uses_a_private_cache():
    assert "placerl-cache" in os.environ[CACHE_ENV]


def test_written_files_get_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "c.json", "{}")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
