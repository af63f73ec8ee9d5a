"""memctx's built-in chunk renderers, one module per chunk family.

They reach memctx only through the ``memctx.renderers`` entry points declared
in memctx's ``pyproject.toml`` -- the same path a third-party plugin takes --
and use only memctx's public API. memctx itself never imports this package.
"""
