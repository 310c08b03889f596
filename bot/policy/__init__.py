"""The maintainers' policy: the TOML model, loading it with file:line errors, and its CLI."""
