"""Drop-in integrations with agent frameworks, each behind an optional extra.

- :mod:`memctx.integrations.openai_agents`: ``MemctxSession``, a session for the
  OpenAI Agents SDK kept in a memctx store thread (``pip install 'memctx[openai-agents]'``).
- :mod:`memctx.integrations.pydantic_ai`: ``MemctxHistoryProcessor``, a pydantic-ai
  history processor that fits the message history into a token budget
  (``pip install 'memctx[pydantic-ai]'``).

Importing this package imports neither framework.
"""
