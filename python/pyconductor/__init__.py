"""pyconductor: the Python driver for Conductor, a durable task engine in PostgreSQL.

The engine lives in SQL (schema ``conductor``); this package claims tasks,
dispatches handlers and reports back. Public names are listed in ``__all__``;
add a new export as one import line plus one ``__all__`` entry.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = [
    "__version__",
]
