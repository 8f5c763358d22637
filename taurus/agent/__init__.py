"""The software half of Taurus: drains the report ring, runs the bound
congestion-control algorithms and writes their decisions back (see docs/DESIGN.md)."""
