"""GitHub as the forge: its ``ForgeClient`` (``api.py``, the only PyGithub user), its webhook
events (``events.py``), and ``doctor``'s check of its settings."""
