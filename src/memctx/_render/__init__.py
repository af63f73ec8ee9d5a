"""Rendering and counting: the renderer registry, plugin discovery through entry points,
declared renderers, the XML modes, tokenizers, a chunk's segment, and the tokens two requests
share."""
