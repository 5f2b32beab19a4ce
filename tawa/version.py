"""tawa's version (also pyproject.toml's): a module of its own, so that code the
package imports can name it without importing the package."""

__version__ = "0.1.0"
