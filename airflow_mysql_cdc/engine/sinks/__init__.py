"""Sinks: where applied changes go. ``interface`` is the contract; ``delta_sink`` the Delta Lake one."""
