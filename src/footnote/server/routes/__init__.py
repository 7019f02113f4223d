"""The HTTP routes, one module per concern. Each parses, calls the core, and translates errors."""
