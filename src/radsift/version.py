"""The package version, in a module of its own so that any stage can read it without importing the root."""

__version__ = "0.1.0"
