"""A stand-in for tritonbench's ``utils/env_utils.py``: outside Meta's monorepo."""


def is_fbcode() -> bool:
    return False
