"""What a run costs: replay a recorded run under a policy or a baseline, priced per provider.

```python
from memctx.replay import load_run, replay

run = load_run("examples/trajectories/pydicom__pydicom-1256.traj.json")
report = replay(run, "stable", model="claude-sonnet-4-6", max_tokens=8_000)
print(report.summary())
report.requests[3].cache_read_tokens, report.cache_read_share, report.cost
open("replay.html", "w").write(report.to_html())
```

The request before each assistant turn is rebuilt in order and billed with the
model's prompt-cache rules (:class:`memctx.policy.ModelProfile`): Anthropic's
breakpoints, lookback, minimum and lifetimes; OpenAI's automatic 128-token
steps; Gemini's implicit minimum. See ``docs/replay.md``.
"""

from memctx.replay._load import load_run
from memctx.replay._report import ReplayReport, RequestCost, render_reports
from memctx.replay._run import (
    ROLLING_MASK,
    STRATEGIES,
    Strategy,
    default_policy,
    replay,
    replay_many,
)

__all__ = [
    "ROLLING_MASK",
    "STRATEGIES",
    "ReplayReport",
    "RequestCost",
    "Strategy",
    "default_policy",
    "load_run",
    "render_reports",
    "replay",
    "replay_many",
]
