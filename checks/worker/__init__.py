"""Code that runs inside the measured process. Standard library only (numpy, torch and triton
imported inside functions): ``main.py`` loads its siblings by file path under private names, so a
measured checkout that has its own ``checks`` package cannot shadow them. Import nothing from ``bot``
or from the rest of ``checks`` here."""
