"""Long-running agents: one policy per model call (see ``docs/long-runs.md``).

```python
from memctx.policy import ContextPolicy, ClearToolUses
from memctx.compaction import CompactionPolicy

policy = ContextPolicy(
    model="claude-sonnet-4-6",
    clear_tool_uses=ClearToolUses(keep_recent=3),
    compaction=CompactionPolicy(trigger=0.8, keep_recent=0.3),
)
step = policy.step(state)             # step.state, step.result, step.request, step.reports
client.messages.create(model="claude-sonnet-4-6", max_tokens=8000, **step.request)
```

Model profiles (:func:`model_profile`, :class:`ModelProfile`) hold each model's
window, tokenizer, prompt-cache rules and prices.
"""

from memctx.policy._clear import ClearToolUses, is_cleared
from memctx.policy._policy import ContextPolicy
from memctx.policy._profiles import (
    MODEL_PROFILES,
    CacheRules,
    ModelProfile,
    model_profile,
    register_model_profile,
)
from memctx.policy._step import PolicyReport, PolicyStep

__all__ = [
    "MODEL_PROFILES",
    "CacheRules",
    "ClearToolUses",
    "ContextPolicy",
    "ModelProfile",
    "PolicyReport",
    "PolicyStep",
    "is_cleared",
    "model_profile",
    "register_model_profile",
]
