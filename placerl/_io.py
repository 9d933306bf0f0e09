"""Files placerl writes: atomic writes and the cache folder.

Every file placerl writes for later reuse (graphs, clusters, cached imports, references) goes
through :func:`atomic_write_text`, so that concurrent writers (vector-env workers, sweep jobs)
and interrupted runs never leave a half-written file behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:  # POSIX advisory locks; elsewhere concurrent writers may both compute (still atomic)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

#: Environment variable naming the cache folder (default ``~/.cache/placerl``).
CACHE_ENV = "PLACERL_CACHE"


def cache_root() -> Path:
    """The cache folder: ``$PLACERL_CACHE``, default ``~/.cache/placerl``."""
    return Path(os.environ.get(CACHE_ENV) or "~/.cache/placerl").expanduser()


def _umask() -> int:
    mask = os.umask(0)  # reading the umask means setting it: put it straight back
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and a rename.

    Readers see either the old file or the whole new one, never a partial write.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


@contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if needed) for the ``with`` block.

    Processes that compute the same cached value (vector-env workers starting together) take
    turns: the first computes and writes, the others then find the file and read it.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)
