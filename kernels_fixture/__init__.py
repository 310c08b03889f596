"""Real kernel pairs (vector add, fused softmax, matmul) and the fixture repository built from them.

``kernels_fixture/toyops`` is a small operator library with each kernel written three ways: CUDA
(``csrc/*.cu``), HIP (``csrc/*.hip``) and Triton (``*.py``). ``kernels_fixture/build_repo.py``
turns it into a two-commit git repository: a base commit that calls the hand-written C++ kernels
and a head commit with the Triton rewrite. The demo review and many tests run on that repository.
"""
