"""The toyops modules that the Triton rewrite replaced, as they are in the fixture's base commit.

Not imported from here: ``kernels_fixture.build_repo`` copies them into the base commit, where
``toyops/vector_add.py`` and ``toyops/softmax.py`` call the hand-written CUDA/HIP kernels.
"""
