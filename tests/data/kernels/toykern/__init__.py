"""Small Triton kernels the compiler-report tests compile for both vendors."""
