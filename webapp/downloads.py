"""Files for the download buttons, in one private temporary folder that is removed when the process exits, and at the
next start when the process was killed before it could remove it."""

import atexit
import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # not on Unix: folders of killed servers stay until the temporary folder is cleaned
    fcntl = None

LOCK = ".in-use"  # held (flock) by the process whose folder it is while it runs: the kernel lets go at its end


class Downloads:
    """A temporary folder of download files, removed at exit: an app restarted many times leaves none behind. A
    process killed outright (SIGKILL, out of memory, power) runs no exit handler: its folder is removed by the next
    one made in the same place (`remove_abandoned`)."""

    def __init__(self, prefix="transformer-app-", parent=None):
        self.prefix, self.parent = prefix, Path(parent or tempfile.gettempdir())
        self.removed = remove_abandoned(self.parent, prefix)
        self.root = Path(tempfile.mkdtemp(prefix=prefix, dir=self.parent))
        self._lock = hold_lock(self.root)
        atexit.register(self.close)

    def close(self):
        """Remove the folder (at exit)."""
        shutil.rmtree(self.root, ignore_errors=True)
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def file(self, data: bytes, name: str) -> str:
        """The path of a file holding `data`, named by its content: a repeated request reuses it and concurrent
        users never overwrite each other's."""
        path = self.root / hashlib.sha1(data).hexdigest()[:20] / name
        if not path.exists():
            path.parent.mkdir(exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.{time.monotonic_ns()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return str(path)


def hold_lock(folder):
    """An open file of `folder` locked by this process (None where there are no file locks)."""
    if fcntl is None:
        return None
    lock = open(folder / f"{LOCK}.new", "w")
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.replace(folder / f"{LOCK}.new", folder / LOCK)  # locked before anyone can see it under its name
    return lock


def remove_abandoned(parent, prefix):
    """Remove the folders `prefix`* of `parent` whose process has ended without removing them: those whose lock
    nobody holds (a running app holds its own). Folders without a lock file are left alone (made by an older
    version, or in the instant between making a folder and locking it). Returns the folders removed."""
    removed = []
    if fcntl is None:
        return removed
    for folder in Path(parent).glob(f"{prefix}*"):
        lock_path = folder / LOCK
        with contextlib.suppress(OSError):
            if folder.is_symlink() or not folder.is_dir() or not lock_path.is_file():
                continue
            with open(lock_path, "a") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its process still runs
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed
