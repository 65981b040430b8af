"""Fetching a pinned source and checking it: the download cache (CACHE/HOST/PATH, so a commit-pinned URL keeps its
commit in the path), the sha256 a file must have (in the code, or recorded in CACHE/sources.lock.json on its first
download), and the errors that name what to do.
"""

import hashlib
import http.client
import json
import os
import urllib.parse
import urllib.request
from pathlib import Path

from tqdm import tqdm

LOCK = "sources.lock.json"


class DownloadError(FileNotFoundError):
    """A source that could not be downloaded: like a missing file, the user fixes it by putting the file in place."""


class SourceChanged(ValueError):
    """A source or an output that is not the pinned one: the data would not be the data the scores are on."""


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def write_atomic(path, data):
    """Write through a temporary file: an interrupted run never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def download(url, path):
    """`url` -> `path`, with a progress bar, through a temporary file so no half download is ever cached."""
    part = path.with_name(path.name + ".part")
    request = urllib.request.Request(url, headers={"User-Agent": "Mozilla/5.0 (training.prepare_data)"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response, open(part, "wb") as f:
            size = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=size, unit="B", unit_scale=True, desc=f"downloading {path.name}") as bar:
                while chunk := response.read(1 << 16):
                    f.write(chunk)
                    bar.update(len(chunk))
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    os.replace(part, path)


def cache_path(url, cache_dir):
    """Where the download of `url` is kept: CACHE/HOST/PATH, so a commit-pinned URL keeps its commit in the path."""
    parts = urllib.parse.urlsplit(url)
    return Path(cache_dir, parts.netloc, *parts.path.strip("/").split("/"))


def fetch(url, cache_dir):
    """The cached download of `url`, downloaded first when absent. A failure names the URL and where to put the file
    by hand."""
    path = cache_path(url, cache_dir)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        download(url, path)
    except (OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(f"could not download {url} ({reason}); download it elsewhere and save it as {path}") from e
    return path


class Lock:
    """CACHE/sources.lock.json: the sha256 of each source without a hash in the code, recorded on its first
    download and checked on every later run."""

    def __init__(self, cache_dir):
        self.path = Path(cache_dir, LOCK)
        self.entries = json.loads(self.path.read_text(encoding="utf-8")) if self.path.is_file() else {}

    def record(self, name, entry):
        self.entries[name] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.entries, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        write_atomic(self.path, text.encode("utf-8"))

    def check(self, name, digest, path, origin):
        """Record `digest` as `name`'s sha256 on its first download; afterwards a different one is an error."""
        recorded = self.entries.get(name, {}).get("sha256")
        if recorded is None:
            self.record(name, {"origin": origin, "sha256": digest})
            print(f"{name}: first download, sha256 {digest} recorded in {self.path}")
        elif digest != recorded:
            raise SourceChanged(
                f"{name}: {path} has sha256 {digest}, not the {recorded} pinned on first download "
                f"for {origin}; delete the file to download it again"
            )


def checked_source(source, cache_dir, lock):
    """-> (path of `source`'s file, its manifest entry), downloaded into the cache where absent, once its sha256 is
    the pinned one."""
    path = fetch(source.url, cache_dir)
    return path, verified(source, path, lock)


def verified(source, path, lock):
    """`source`'s manifest entry, once the file at `path` has the sha256 pinned for it: the one in the code, or the one
    recorded on its first download (recorded now when this is the first)."""
    digest = sha256(path.read_bytes())
    if source.sha256 and digest != source.sha256:
        raise SourceChanged(
            f"{source.name}: {path} has sha256 {digest}, not the {source.sha256} pinned in the code "
            f"for {source.url}; delete the file to download it again"
        )
    if not source.sha256:
        lock.check(source.name, digest, path, source.url)
    return {
        "name": source.name,
        "url": source.url,
        "sha256": digest,
        "pinned": "in the code" if source.sha256 else "on first download",
        "licence": source.licence,
        "credit": source.credit,
    }
