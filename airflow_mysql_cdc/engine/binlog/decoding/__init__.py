"""binlog/decoding."""
