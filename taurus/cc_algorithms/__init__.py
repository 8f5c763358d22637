"""Pluggable congestion-control algorithms, chosen by config."""
