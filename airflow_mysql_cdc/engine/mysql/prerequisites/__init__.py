"""mysql/prerequisites."""
