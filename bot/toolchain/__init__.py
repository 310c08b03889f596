"""The toolchain a repository pins (Triton, PyTorch, their vendor builds and the compilers of
the other kernel languages) and its changes.

``packages.py`` says which packages those are; ``pins.py`` reads the pins out of one file's
text (requirements, pyproject, lock files, conda environments, Dockerfiles, CI workflows);
``detect.py`` compares two sides of a diff and says which pins moved. Pure: text in, values
out; never imports torch or triton.
"""
