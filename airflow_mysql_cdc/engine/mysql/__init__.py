"""mysql."""
