"""Long-running agents: one policy per model call (see ``docs/long-runs.md``).

```python
from memctx.policy import model_profile, ModelProfile, CacheRules

profile = model_profile("claude-sonnet-4-6")   # window, tokenizer, cache rules, prices
```
"""

from memctx.policy._profiles import (
    MODEL_PROFILES,
    CacheRules,
    ModelProfile,
    model_profile,
    register_model_profile,
)

__all__ = [
    "MODEL_PROFILES",
    "CacheRules",
    "ModelProfile",
    "model_profile",
    "register_model_profile",
]
