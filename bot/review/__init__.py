"""The review: conditions and verdict from evidence, the markdown layout, and the one tail."""
