"""Built-in dump support."""
