"""Test doubles that installed users need too (benchmarks, their own tests)."""
