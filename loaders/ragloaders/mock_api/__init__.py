"""CRAG's mock API (tasks 2 and 3) answered from a `crag/mock_kg` build: in process (`CragMockAPI`) or over HTTP
(`ragloaders serve crag/mock_kg`, module http)."""

from .client import CragMockAPI

__all__ = ["CragMockAPI"]
