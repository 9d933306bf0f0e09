"""placerl's version, in a module of its own so that cache keys can read it without importing
the top-level package (which registers the Gymnasium ids)."""

__version__ = "0.2.0"
