"""Rendering and counting: the renderer registry, plugin discovery through entry points,
declared renderers, tokenizers, a chunk's segment, and the tokens two requests share."""
