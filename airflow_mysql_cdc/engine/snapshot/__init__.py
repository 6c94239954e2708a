"""Lock-free chunked snapshots bracketed by GTID watermarks (see docs/snapshots.md)."""
