"""What tunes a kernel from outside its body: the config list a builder function returns and
the parameters its configs set (``config_builders``), what an autotune decorator reads besides
the kernel (``decorator_reads``: pruners, builders, a function applying autotune to a kernel),
host functions whose values reach a launch's tuning options in any module
(``tuning_helpers``), and the module-level tables of launch values those read (``tables``).
Each reads the program through ``bot.analysis.reach``; nothing in ``reach`` reads these."""
