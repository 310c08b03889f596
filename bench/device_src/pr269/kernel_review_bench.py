"""The bench entry of tritonbench's sum operator at its defaults (a 1-D input reduced to a
scalar), for kernel-review: ``execute_kernel_scalar_result``, the function the operator's
``triton_sum`` calls, on a random input of the case's shape."""


def sum_scalar(shape, dtype, *, device="cuda", seed=0):
    import torch
    from tritonbench.operators.sum.operator import execute_kernel_scalar_result

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(device=device, dtype=getattr(torch, dtype))
    return {
        "fn": lambda: execute_kernel_scalar_result(x),
        "reference": lambda: x.double().sum().to(x.dtype),
        "bytes_moved": (x.numel() + 1) * x.element_size(),
        "atol": 1e-2,
        "rtol": 1e-4,
    }
