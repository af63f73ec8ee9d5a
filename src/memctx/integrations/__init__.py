"""Drop-in integrations with agent frameworks, each behind an optional extra.

- :mod:`memctx.integrations.openai_agents`: ``MemctxSession``, a session for the
  OpenAI Agents SDK kept in a memctx store thread, and ``budget_filter(policy)``, a
  ``call_model_input_filter`` holding a ``ContextPolicy``'s budget for every model call
  of a run (``pip install 'memctx[openai-agents]'``).
- :mod:`memctx.integrations.pydantic_ai`: ``MemctxHistoryProcessor``, a pydantic-ai
  history processor that fits the message history into a token budget, or steps a
  ``ContextPolicy`` (``pip install 'memctx[pydantic-ai]'``).
- :mod:`memctx.integrations.langchain`: ``MemctxMiddleware(policy)``, a LangChain v1
  agent middleware for ``create_agent`` (``pip install 'memctx[langchain]'``).

Importing this package imports neither framework.
"""
