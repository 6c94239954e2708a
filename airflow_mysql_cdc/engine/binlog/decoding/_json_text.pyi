def json_text(payload: bytes, /) -> str | None:
    """``canonical_json(binary_json_value(payload))``, or None where the Python pair must decide."""
