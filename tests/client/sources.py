#!/usr/bin/env python3
"""The files make check-client compiles, taken from the pinned llama-cpp-python sdist unmodified.

usage: sources.py ARCHIVE SHA256 DEST
Checks the archive's SHA-256, extracts ggml's include/, the files of src/ and src/ggml-metal/ and src/ggml-cpu's headers
into DEST (once), then checks the SHA-256 of every extracted file against the archive's copy
and prints the ggml directory. Exits 1 naming the first file that differs or is missing.
Never writes outside DEST; never follows a link in the archive.
"""
import hashlib
import os
import sys
import tarfile


def sha(data):
    return hashlib.sha256(data).hexdigest()


def wanted(name, root):
    if not name.startswith(root):
        return None
    rel = name[len(root):]
    parts = rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        sys.exit("check-client: %s: a path that leaves its directory" % name)
    if parts[0] == "include" and len(parts) == 2:
        return rel
    if parts[0] == "src" and (len(parts) == 2 or (parts[1] == "ggml-metal" and len(parts) >= 3)):
        return rel
    if parts[0] == "src" and parts[1] == "ggml-cpu" and len(parts) == 3 and rel.endswith(".h"):
        return rel  # ggml-quants.c includes ggml-cpu/ggml-cpu-impl.h
    return None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.strip().splitlines()[2])
    archive, pinned, dest = sys.argv[1:]
    h = hashlib.sha256()
    with open(archive, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != pinned:
        sys.exit("check-client: %s: SHA-256 %s, expected %s" % (archive, h.hexdigest(), pinned))
    base = os.path.basename(archive)[: -len(".tar.gz")]
    root = base + "/vendor/llama.cpp/ggml/"
    ggml = os.path.join(dest, "ggml")
    checked = 0
    with tarfile.open(archive, "r:gz") as tar:
        for m in tar:
            rel = wanted(m.name, root)
            if rel is None or m.isdir():
                continue
            if not m.isfile():
                sys.exit("check-client: %s: not a regular file in the archive" % m.name)
            data = tar.extractfile(m).read()
            path = os.path.join(ggml, rel)
            if not os.path.lexists(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path + ".tmp", "wb") as out:
                    out.write(data)
                os.replace(path + ".tmp", path)
            if os.path.islink(path) or not os.path.isfile(path):
                sys.exit("check-client: %s: not a regular file" % path)
            with open(path, "rb") as f:
                if sha(f.read()) != sha(data):
                    sys.exit("check-client: %s differs from the archive's copy (SHA-256); remove %s to extract it again" % (path, dest))
            checked += 1
    if checked == 0:
        sys.exit("check-client: %s holds no %s" % (archive, root))
    sys.stderr.write("check-client: %d files of ggml checked against %s (SHA-256)\n" % (checked, os.path.basename(archive)))
    print(ggml)


if __name__ == "__main__":
    main()
