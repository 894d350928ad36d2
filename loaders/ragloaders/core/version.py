"""The package version (read by setup.cfg without importing the package)."""

VERSION = "0.2.0"
