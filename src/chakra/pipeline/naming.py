"""How the pipeline's outputs name files, so that their bytes do not depend on where the
output folder is (the same job written to two folders is the same, byte for byte).

* A file of the output folder (``rank0.et_plus.json``, ``workload.0.et``) is named by its
  name: it is a sibling of the report that names it.
* An input trace is named by its path relative to the folder holding every input of the job
  (:func:`input_labels`): ``rank0.host_et.json`` for a job in one folder, ``hosts/r0.json``
  and ``kineto/r0.json`` for one in two folders under ``job/``. That does not depend on the
  current folder or on how the inputs were given (relative, absolute) either. Inputs at
  URLs sharing a scheme and host are named the same way; a job mixing local paths and URLs,
  or URLs of several hosts, names each input in full.

Nothing reads these names back: resuming compares sizes and digests, never paths
(:mod:`chakra.pipeline.resume`).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from chakra.fileio.location import Location


def input_labels(paths: Sequence[Location]) -> list[str]:
    """Each of ``paths`` relative to the deepest folder holding them all (module doc)."""
    if not paths:
        return []
    if all(isinstance(path, Path) for path in paths):
        absolute = [os.path.abspath(path) for path in paths]
        common = os.path.commonpath([os.path.dirname(path) for path in absolute])
        return [os.path.relpath(path, common) for path in absolute]
    if all(isinstance(path, str) for path in paths):
        parts = [urlsplit(str(path)) for path in paths]
        if len({(part.scheme, part.netloc) for part in parts}) == 1:
            inner = [part.path for part in parts]
            try:
                common = posixpath.commonpath([posixpath.dirname(path) for path in inner])
                return [posixpath.relpath(path, common) for path in inner]
            except ValueError:  # no path, or some absolute and some not: named in full
                pass
    return [str(path) for path in paths]
