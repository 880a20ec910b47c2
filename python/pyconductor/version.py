"""The release of this package (read by the build: pyproject.toml's hatch version path)."""

__version__ = "0.1.0"
