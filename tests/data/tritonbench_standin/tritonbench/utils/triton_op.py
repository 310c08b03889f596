"""A stand-in for tritonbench's ``utils/triton_op.py`` (meta-pytorch/tritonbench): what an
operator imports from it, its ``register_benchmark`` asserting, as tritonbench's does, that the
operator's module is imported by its dotted name (``tritonbench.operators.<op>...``)."""

import enum


class Mode(enum.Enum):
    FWD = "fwd"
    BWD = "bwd"


class BenchmarkOperatorMetrics:
    pass


class BenchmarkOperator:
    def __init__(self, tb_args, extra_args=None):
        raise RuntimeError("parses tritonbench's command line")


def register_benchmark(baseline=False, **_options):
    def decorator(function):
        assert function.__module__.startswith("tritonbench.operators."), function.__module__
        return function

    return decorator


def register_metric(**_options):
    return lambda function: function
