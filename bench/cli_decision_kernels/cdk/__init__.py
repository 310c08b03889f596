"""Kernels written for bench/cli_decision.py: a scaled add (memory-bound) and a row sum."""
