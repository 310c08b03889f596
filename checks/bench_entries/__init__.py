"""A repository's bench entries: the forms its benchmarks take (``bench_forms``), the calls
captured from them (``bench_capture``) and the kernels a call of one launched (``launches``). Standard library only: the worker, the compiler's and
the first call's helper programs load them by file path, and ``init`` reads the forms."""
