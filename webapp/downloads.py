"""Files for the download buttons, in one private temporary folder that is removed when the process exits."""

import atexit
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path


class Downloads:
    """A temporary folder of download files, removed at exit: an app restarted many times leaves none behind."""

    def __init__(self, prefix="transformer-app-"):
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        atexit.register(shutil.rmtree, self.root, ignore_errors=True)

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
