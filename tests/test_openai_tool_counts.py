"""How a build with ``provider="openai"`` counts native tool calls and ``tool`` messages.

OpenAI publishes no layout for them; the rule (a call: its name, arguments and 3; a ``tool``
message: 2 fewer than a text message; no call id) is the one community counters calibrated
against the API's ``prompt_tokens``. These tests pin it to the one API-measured
``tool_calls`` request we found, and keep the count marked inexact.
"""

from __future__ import annotations

from memctx import MemoryState, chunks, create_builder, create_tokenizer
from memctx.adapters._openai_tokens import _message_tokens

GPT4 = create_tokenizer("gpt-4")
GPT4O = create_tokenizer("gpt-4o")

# forestwanglin/openai-java issue 5: gpt-4 reported 35 prompt tokens for this request.
MEASURED_REQUEST = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_Id8ycVMsW8gdsf7kSXfgAcf1",
                "type": "function",
                "function": {
                    "name": "get_current_weather",
                    "arguments": '{\n  "location": "Boston, MA"\n}',
                },
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_Id8ycVMsW8gdsf7kSXfgAcf1",
        "name": "get_current_weather",
        "content": "29 degree celcius",
    },
]


class TestOpenAIToolCounts:
    def test_the_api_measured_request_counts_what_the_api_reported(self) -> None:
        priming = GPT4.count_messages([])

        counted = [_message_tokens(m, [], GPT4, priming) for m in MEASURED_REQUEST]

        assert priming + sum(tokens for tokens, _ in counted) == 35
        assert not any(exact for _, exact in counted)

    def test_call_ids_cost_nothing(self) -> None:
        def run(call_id: str) -> MemoryState:
            return MemoryState(
                [
                    chunks.user("List the files.", id="u"),
                    chunks.tool_call("sh", {"cmd": "ls"}, call_id=call_id, id="c"),
                    chunks.tool_result("sh", "README.md", call_id=call_id, id="r"),
                ]
            )

        builder = create_builder(GPT4O)
        short = builder.build(run("c1"), provider="openai")
        long = builder.build(run("call_" + "Xy7" * 20), provider="openai")

        assert short.token_count == long.token_count
        assert not short.token_count_exact

    def test_a_call_costs_its_name_arguments_and_three(self) -> None:
        priming = GPT4O.count_messages([])
        call = {"id": "c", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
        message = {"role": "assistant", "content": None, "tool_calls": [call, call]}

        tokens, exact = _message_tokens(message, [], GPT4O, priming)

        empty = GPT4O.count_messages([{"role": "assistant", "content": ""}]) - priming
        assert tokens == empty + 2 * (GPT4O.count("sh") + GPT4O.count("{}") + 3)
        assert not exact
