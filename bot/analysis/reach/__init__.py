"""Changes that reach a kernel from outside its own code: the jit helpers it calls, C++ host code
and local headers, C++ loaders that launch Triton kernels by name, Python call sites switched from
a compiled op to a Triton wrapper, and vendor or architecture branches on its launch path."""
