"""ExtractiveSummarizer: a deterministic summary of covered chunks, without a model.

The summary is Markdown under fixed headings, so that a model reads it
well and a later compaction can fold it into the next one (it parses its
own headings back)::

    ## Goal              the task (the first user message), quoted
    ## Requests          later user messages, interventions, parent instructions
    ## Done              tool and skill calls: key arguments and outcome
    ## Errors            failed calls and their last error line
    ## Sub-agents        delegations and what they reported
    ## Files             read / changed
    ## Open todos        the last todo list's unfinished items
    ## Key decisions     the last assistant answers, thoughts and completions
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import CompactionError
from memctx.compress._call_facts import call_outcome, files_of_call, key_arguments, one_line
from memctx.compress._compressors import cut_text

HEADINGS: Final = (
    "Goal",
    "Requests",
    "Done",
    "Errors",
    "Sub-agents",
    "Files",
    "Open todos",
    "Key decisions",
    "Earlier summary",
)
RECALL_HINT: Final = (
    "Older details (whole outputs, exact texts) were left out of this summary; "
    "recall them with the `recall` tool."
)
_PROSE: Final = ((1.0, 1.0), (0.5, 1.0), (0.0, 1.0), (0.0, 0.5), (0.0, 0.25), (0.0, 0.125))
"""(decisions and older quotes, the goal's quote): the caps' scales tried first, with every
step done listed (prose goes first)."""
_LAST: Final = (1.0, 0.5, 0.25, 0.125, 0.0)
"""The scales of the errors, files, requests and sub-agents, tried in turn while fewer than
that scale of :data:`_FLOOR` steps done would be listed: the commands run, with their exit
status, and the error lines go last (the agent needs them to avoid repeating itself)."""
_FLOOR: Final = 25
"""The steps done listed at least before the other sections shrink (at full scale)."""
_SIZE: Final = re.compile(r", \d+ lines?$")
"""The output's size at the end of a step done: the first detail dropped from every step
before any step is (``→ exit 1, 3 lines`` becomes ``→ exit 1``)."""
_COMMAND_STEP: Final = re.compile(r"^- \S+ `")
"""A step done that ran a command (``- bash `make test` → exit 0``)."""
_MORE: Final = re.compile(r" … \(([\d,]+) more characters\)$")
_OMITTED: Final = re.compile(r"^\((\d+) earlier (?:steps|items) not listed\)$")


@attrs.define
class _Sections:
    goal: list[str] = attrs.Factory(list)
    requests: list[str] = attrs.Factory(list)
    done: list[str] = attrs.Factory(list)
    done_omitted: int = 0
    errors: list[str] = attrs.Factory(list)
    subagents: list[str] = attrs.Factory(list)
    read: list[str] = attrs.Factory(list)
    changed: list[str] = attrs.Factory(list)
    todos: list[str] | None = None
    decisions: list[str] = attrs.Factory(list)
    earlier: list[str] = attrs.Factory(list)


def _parse(text: str) -> _Sections | None:
    """Read a summary this summarizer wrote back into its sections (None if it is not one)."""
    by_heading: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line == RECALL_HINT:
            continue
        if line.startswith("## "):
            heading = line[3:].strip()
            if heading not in HEADINGS:
                return None
            current = by_heading.setdefault(heading, [])
        elif current is not None and line.strip():
            current.append(line)
        elif current is None and line.strip():
            return None
    if not by_heading:
        return None
    done = by_heading.get("Done", [])
    omitted = 0
    if done and (found := _OMITTED.match(done[0])):
        omitted = int(found.group(1))
        done = done[1:]
    files = by_heading.get("Files", [])
    read = [line[len("- read: ") :] for line in files if line.startswith("- read: ")]
    changed = [line[len("- changed: ") :] for line in files if line.startswith("- changed: ")]
    todos = by_heading.get("Open todos")
    return _Sections(
        goal=[line[2:] if line.startswith("> ") else line for line in by_heading.get("Goal", [])],
        requests=by_heading.get("Requests", []),
        done=done,
        done_omitted=omitted,
        errors=by_heading.get("Errors", []),
        subagents=by_heading.get("Sub-agents", []),
        read=[p for line in read for p in line.split(", ")],
        changed=[p for line in changed for p in line.split(", ")],
        todos=None if todos is None else todos,
        decisions=by_heading.get("Key decisions", []),
        earlier=by_heading.get("Earlier summary", []),
    )


def _without_known(s: _Sections, known: str) -> _Sections:
    """``s`` without the files, error lines, requests and sub-agent lines ``known`` (the
    earlier summaries' text) already holds: a path it names anywhere is not listed as
    read again, nor as changed again when it is listed as changed there."""
    old = _parse(known)
    lines = {line.strip() for line in known.splitlines()}
    changed = set(old.changed) if old is not None else set()

    def named(path: str) -> bool:
        return re.search(rf"(?<![\w./-]){re.escape(path)}(?![\w/-])", known) is not None

    def fresh(items: list[str]) -> list[str]:
        return [line for line in items if line.strip() not in lines]

    return attrs.evolve(
        s,
        requests=fresh(s.requests),
        errors=fresh(s.errors),
        subagents=fresh(s.subagents),
        read=[p for p in s.read if not named(p)],
        changed=[p for p in s.changed if p not in changed and (old is not None or not named(p))],
    )


def _latest(lines: list[str]) -> list[str]:
    """``lines`` with each repeated line kept only where it occurs last."""
    return list(reversed(dict.fromkeys(reversed(lines))))


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


@attrs.frozen
class ExtractiveSummarizer:
    """Summarise without a model: deterministic, offline, under fixed headings.

    It keeps the task, the calls made (key arguments and outcome), the files
    read and changed, the errors met, what sub-agents reported, the open
    todos and the last decisions. The ``max_*`` settings cap each section
    (the newest entries are kept), and ``max_chars`` the whole: a summary
    that would be longer drops, in turn, the older decisions and quotes, the
    goal's quote beyond its first lines, the output sizes of the steps done
    (``→ exit 1, 3 lines`` becomes ``→ exit 1``), then the oldest steps, as
    few as it must (each step kept is its command's first line verbatim with
    its exit status), and below 25 steps halves the other sections too, so it
    stays small however many compactions fold into it.
    """

    max_goal_chars: int = 1500
    max_done: int = 200
    max_errors: int = 40
    max_subagents: int = 20
    max_requests: int = 8
    max_decisions: int = 5
    max_files: int = 200
    line_chars: int = 160
    max_chars: int = 6000
    recall_hint: bool = False

    def __attrs_post_init__(self) -> None:
        if self.recall_hint is not True and self.recall_hint is not False:
            raise CompactionError(
                f"ExtractiveSummarizer.recall_hint must be True or False, got {self.recall_hint!r}"
            )
        for field in attrs.fields(ExtractiveSummarizer):
            if field.name == "recall_hint":
                continue
            value = getattr(self, field.name)
            minimum = 200 if field.name == "max_chars" else 0
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise CompactionError(
                    f"ExtractiveSummarizer.{field.name} must be an int >= {minimum}, got {value!r}"
                )

    def __call__(
        self,
        chunks: Sequence[Chunk],
        previous: str | None,
        *,
        known: str | None = None,
        max_chars: int | None = None,
    ) -> str:
        """The summary of ``chunks`` folded into ``previous`` (see the class docstring).

        ``known``: the text of earlier summaries that stay in front of this one (a
        summary stacked after them): a file, error line, request or sub-agent line they
        already hold is not repeated, and a step that ran no command and succeeded is
        not listed when the files list its path (the path is the fact; the step adds
        nothing the agent needs). ``max_chars``: the size cap for this summary, instead
        of :attr:`max_chars`.
        """
        new = self._extract(chunks, stacked=known is not None)
        if known is not None:
            # The task stays in front: a user turn here is a later request, not the goal.
            asked = " ".join(new.goal)
            requests = [f"- {one_line(asked, self.line_chars * 2)}"] if asked else []
            new = attrs.evolve(new, goal=[], requests=[*requests, *new.requests])
            new = _without_known(new, known)
        if previous is None:
            merged = new
        else:
            old = _parse(previous)
            if old is None:
                old = _Sections(earlier=[f"> {line}" for line in previous.splitlines()])
            merged = self._merge(old, new)
        told = self.recall_hint and known is not None and RECALL_HINT in known
        hint = f"\n\n{RECALL_HINT}" if self.recall_hint and not told else ""
        cap = self.max_chars if max_chars is None else max(200, max_chars)
        limit = cap - len(hint)
        # Shrink what the agent needs least first: decisions and quoted older summaries,
        # then the goal's quote; then the output sizes of the steps done, then the oldest
        # steps one by one (as many as fit), and below 25 of them, the errors, files,
        # requests and sub-agents too (halved each time the floor is).
        for low, goal in _PROSE:
            text = self._render(merged, low, goal)
            if len(text) <= limit:
                return text + hint
        terse = attrs.evolve(merged, done=[_SIZE.sub("", line) for line in merged.done])
        for high in _LAST:
            floor = min(len(terse.done), self.max_done, int(_FLOOR * high))
            steps = self._most_steps(terse, limit, high)
            if steps is not None and (steps >= floor or high == 0.0):
                return self._render(terse, 0.0, 0.125, done=steps, high=high) + hint
        return cut_text(self._render(terse, 0.0, 0.0, done=0, high=0.0), max(limit, 1)) + hint

    def _most_steps(self, s: _Sections, limit: int, high: float) -> int | None:
        """The most steps done the summary can list within ``limit`` (the oldest left out
        first, those that ran no command before those that did) with the other sections'
        caps scaled by ``high`` (None: not even none)."""
        fits, over = -1, min(len(s.done), self.max_done) + 1  # fits: -1 for "not even 0"
        while over - fits > 1:
            middle = (fits + over) // 2
            if len(self._render(s, 0.0, 0.125, done=middle, high=high)) <= limit:
                fits = middle
            else:
                over = middle
        return None if fits < 0 else fits

    def _extract(self, chunks: Sequence[Chunk], *, stacked: bool = False) -> _Sections:
        s = _Sections()
        results: dict[str, list[Chunk]] = {}
        agents: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            meta = chunk.metadata
            if chunk.type is ChunkType.ENVIRONMENT and meta.call_id:
                results.setdefault(meta.call_id, []).append(chunk)
            elif chunk.action == "subagent_result" and meta.subagent_id:
                agents.setdefault(meta.subagent_id, []).append(chunk)
        width = self.line_chars
        for chunk in chunks:
            meta = chunk.metadata
            kind = (chunk.type, chunk.role, chunk.action, chunk.subtype)
            if chunk.type is ChunkType.AGENT and chunk.action in ("image", "document"):
                shown = meta.title or chunk.content.get("url") or meta.media_type
                s.requests.append(f"- ({chunk.action} given: {shown})")  # never its data
            elif chunk.type is ChunkType.AGENT and chunk.role == "user":
                if not s.goal:
                    s.goal.extend(self._goal(chunk.text))
                else:
                    s.requests.append("- " + one_line(chunk.text, width * 2))
            elif kind[0] is ChunkType.WORKING_FLOW and chunk.subtype == "USER":
                s.requests.append("- (intervention) " + one_line(chunk.text, width * 2))
            elif chunk.action == "parent_agent_message":
                text = one_line(chunk.text, width * 2)
                s.requests.append(f"- (from {meta.parent_agent_id}) {text}")
            elif chunk.action in ("tool_call", "skill_call"):
                name = meta.tool or meta.skill or "?"
                args = key_arguments(chunk.content, width)
                outcome, error = call_outcome(results.get(meta.call_id or "", []))
                read, changed = files_of_call(chunk)
                plain = not args.startswith("`") and error is None and bool(read or changed)
                if not (stacked and plain):  # stacked: the files list its path
                    s.done.append(f"- {name} {args} → {outcome}".replace("  ", " "))
                if error is not None:
                    s.errors.append(f"- {name} {key_arguments(chunk.content, 60)}: {error}")
                s.read = _union(s.read, read)
                s.changed = _union(s.changed, changed)
            elif chunk.type is ChunkType.ENVIRONMENT and not meta.call_id:
                outcome, error = call_outcome([chunk])
                s.done.append(f"- {meta.tool or meta.skill or '?'} (result) → {outcome}")
                if error is not None:
                    s.errors.append(f"- {meta.tool or meta.skill or '?'}: {error}")
            elif chunk.action == "spawn_subagent":
                task = chunk.content.get("task") if isinstance(chunk.content, Mapping) else None
                reports = agents.get(meta.subagent_id or "", [])
                line = f"- {meta.agent_type} {meta.subagent_id}: {key_arguments(task, width)}"
                if reports:
                    last = reports[-1]
                    verdict = "succeeded" if last.metadata.success is not False else "failed"
                    line += f" → {verdict}: {one_line(last.text, width * 2)}"
                else:
                    line += " → no result yet"
                s.subagents.append(line)
            elif chunk.action == "subagent_result" and not any(
                c.action == "spawn_subagent" and c.metadata.subagent_id == meta.subagent_id
                for c in chunks
            ):
                s.subagents.append(f"- {meta.subagent_id} → {one_line(chunk.text, width * 2)}")
            elif chunk.action == "todo_set":
                s.todos = _open_todos(chunk.content, width)
            elif chunk.type is ChunkType.AGENT and chunk.role == "assistant":
                s.decisions.append("- " + one_line(chunk.text, width * 2))
            elif chunk.type is ChunkType.WORKING_FLOW and chunk.subtype == "THINKING":
                s.decisions.append("- (thought) " + one_line(chunk.text, width * 2))
            elif chunk.type is ChunkType.OUTPUT:
                s.decisions.append(f"- ({chunk.action}) " + one_line(chunk.text, width * 2))
            elif chunk.type is ChunkType.WORKING_FLOW and chunk.subtype == "PROGRESS_SUMMARY":
                s.earlier.extend(f"> {line}" for line in chunk.text.splitlines() if line.strip())
        return s

    def _goal(self, text: str) -> list[str]:
        return [line.rstrip() for line in text.splitlines() if line.strip()]

    def _merge(self, old: _Sections, new: _Sections) -> _Sections:
        return _Sections(
            goal=old.goal or new.goal,
            requests=[*old.requests, *new.requests],
            done=_latest([*old.done, *new.done]),
            done_omitted=old.done_omitted,
            errors=_latest([*old.errors, *new.errors]),
            subagents=[*old.subagents, *new.subagents],
            read=_union(old.read, new.read),
            changed=_union(old.changed, new.changed),
            todos=new.todos if new.todos is not None else old.todos,
            decisions=[*old.decisions, *new.decisions],
            earlier=[*old.earlier, *new.earlier],
        )

    def _render(
        self,
        s: _Sections,
        low: float,
        goal_scale: float,
        *,
        done: int | None = None,
        high: float = 1.0,
    ) -> str:
        """The summary with the caps scaled (``done``: that many steps listed at most, see
        :func:`_kept_steps`)."""
        parts: list[str] = []

        def section(heading: str, lines: list[str]) -> None:
            if lines:
                parts.append(f"## {heading}\n" + "\n".join(lines))

        def newest(items: list[str], cap: int, scale: float = high) -> list[str]:
            kept = int(cap * scale)
            return items[max(len(items) - kept, 0) :] if kept else []

        goal = "\n".join(s.goal)
        earlier_cut = 0
        if found := _MORE.search(goal):  # cut by an earlier summary already
            goal, earlier_cut = goal[: found.start()], int(found.group(1).replace(",", ""))
        limit = max(int(self.max_goal_chars * goal_scale), 200)
        cut = earlier_cut + max(len(goal) - limit, 0)
        if cut:
            goal = goal[:limit] + f" … ({cut:,} more characters)"
        section("Goal", [f"> {line}" for line in goal.splitlines()])
        section("Requests", newest(s.requests, self.max_requests))
        steps = s.done[max(len(s.done) - self.max_done, 0) :]
        listed = steps if done is None else _kept_steps(steps, done)
        omitted = s.done_omitted + len(s.done) - len(listed)
        if omitted:
            listed = [f"({omitted} earlier steps not listed)", *listed]
        section("Done", listed)
        section("Errors", newest(s.errors, self.max_errors))
        section("Sub-agents", newest(s.subagents, self.max_subagents))
        files = []
        if s.read:
            files.append("- read: " + ", ".join(newest(s.read, self.max_files)))
        if s.changed:
            files.append("- changed: " + ", ".join(newest(s.changed, self.max_files)))
        section("Files", [line for line in files if not line.endswith(": ")])
        if s.todos is not None:
            section("Open todos", s.todos or ["- (none)"])
        section("Key decisions", newest(s.decisions, self.max_decisions, low))
        section("Earlier summary", newest(s.earlier, 40, low))
        return "\n\n".join(parts) if parts else "## Done\n(nothing to report)"


def _kept_steps(steps: list[str], count: int) -> list[str]:
    """``count`` of ``steps``, in order: the oldest go first, those without a command (a
    read or an edit, whose path the files list) before any command."""
    if count >= len(steps):
        return steps
    plain = [i for i, line in enumerate(steps) if not _COMMAND_STEP.match(line)]
    commands = [i for i, line in enumerate(steps) if _COMMAND_STEP.match(line)]
    dropped = set((plain + commands)[: len(steps) - count])
    return [line for i, line in enumerate(steps) if i not in dropped]


def _open_todos(content: Any, width: int) -> list[str]:
    todos = content.get("todos") if isinstance(content, Mapping) else None
    if not isinstance(todos, Sequence) or isinstance(todos, str):
        return []
    lines = []
    for item in todos:
        if isinstance(item, Mapping):
            text = item.get("task") or item.get("content") or item.get("text") or item.get("title")
            status = str(item.get("status", "")).lower()
            done = item.get("done") is True or status in ("done", "completed", "cancelled")
            if done:
                continue
            label = one_line(str(text if text is not None else dict(item)), width)
            lines.append(f"- [ ] {label}" + (f" ({status})" if status else ""))
        else:
            lines.append(f"- [ ] {one_line(str(item), width)}")
    return lines
