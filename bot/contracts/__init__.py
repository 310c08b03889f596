"""Every type that crosses a boundary between jobs or packages: frozen, with one base."""
