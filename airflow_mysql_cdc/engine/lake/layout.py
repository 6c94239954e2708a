"""Where a pipeline's Delta tables live under its lake root.

Invariant: the lake layout is a public contract (documented in docs/binlog-application.md);
downstream readers depend on it. Change it only with a migration.

Lake locations are URIs (``s3://bucket/prefix``, ``gs://``, ``abfss://``, ``file:///``) or local
paths, joined with ``/`` as strings. Never through :mod:`pathlib`: ``Path("s3://lake/shop")``
collapses the ``//`` into ``s3:/lake/shop``, which delta-rs cannot recognise as a URL (every
application and checkpoint task failed on an object-store lake that way). Guarded by
``tests/unit/test_lake_layout.py``. No Arrow or Delta imports here: the DAG file's tasks import it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

LakeRoot = str | os.PathLike[str]
"""A lake location: a URI (``s3://bucket/prefix``) or a local path (a ``Path`` is fine for tests)."""

OWN_TABLE_PROPERTIES = {
    "delta.logRetentionDuration": "interval 1 hours",
    "delta.deletedFileRetentionDuration": "interval 1 hours",
}
"""Table properties of the pipeline's own tables (``_cdc/...``), set when they are created (and by
maintenance on older lakes). Nothing reads their history or old versions, and the state table takes
two commits per batch, so their log and replaced files are kept an hour (for readers in flight),
not Delta's 30 and 7 days: delta-rs's automatic checkpoints (every 100 commits) then clean their
logs as they go, and maintenance vacuums their files."""

_SAFE_NAME = re.compile(r"^[A-Za-z0-9_$-]+$")


@dataclass(frozen=True)
class LakeLayout:
    """The locations of one lake's tables under ``root``: a URI or a local path, as a string."""

    root: str

    def __init__(self, root: LakeRoot) -> None:
        object.__setattr__(self, "root", lake_uri(root))

    def target(self, schema: str, table: str) -> str:
        return self._join(_segment(schema), _segment(table))

    def changelog(self, schema: str, table: str) -> str:
        return self._join("_changelog", _segment(schema), _segment(table))

    @property
    def state(self) -> str:
        return self._join("_cdc", "state")

    @property
    def checkpoints(self) -> str:
        """Every checkpoint record the pipeline's DAG runs published, append-only."""
        return self._join("_cdc", "checkpoints")

    @property
    def maintenance_log(self) -> str:
        """What each maintenance run did (and when: the next one waits out the policy's interval)."""
        return self._join("_cdc", "maintenance")

    @property
    def verify_log(self) -> str:
        """Each table's latest verification and where its sampled verification goes on (one row each)."""
        return self._join("_cdc", "verify")

    def snapshot_log(self, schema: str, table: str) -> str:
        """The records of one table's snapshots: plans, finished chunks, watermarks, definitions."""
        return self._join("_cdc", "snapshots", _segment(schema), _segment(table))

    def join_state(self, schema: str, table: str, snapshot_id: str) -> str:
        """State of one table's catch-up from its snapshot to the pipeline's position."""
        return self._join("_cdc", "joins", _segment(schema), _segment(table), _segment(snapshot_id))

    def _join(self, *segments: str) -> str:
        separator = "" if self.root.endswith("/") else "/"
        return self.root + separator + "/".join(segments)


def lake_uri(root: LakeRoot) -> str:
    """``root`` without trailing slashes, its scheme's ``//`` kept (``file:///`` stays a root)."""
    text = os.fspath(root).strip()
    scheme, separator, rest = text.partition("://")
    stripped = rest.rstrip("/")
    if not text or (separator and not stripped and not rest.startswith("/")):
        raise ValueError(
            f"lake root {text!r} names no location: set lake_root to a local path or a URI such as "
            "s3://bucket/prefix"
        )
    if not separator:
        return text.rstrip("/") or "/"
    return f"{scheme}://{stripped or '/'}"


def _segment(name: str) -> str:
    if not _SAFE_NAME.match(name):
        raise ValueError(f"{name!r} cannot be used as a lake path segment (letters, digits, _ $ - only)")
    return name
