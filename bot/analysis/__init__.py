"""Kernel changes in a diff: parse, scan each language, classify, pair rewrites, count code."""
