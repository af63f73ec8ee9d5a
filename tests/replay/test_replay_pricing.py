"""Each provider's cache rule, checked against figures worked out by hand.

A request is written as its blocks: ``(label, tokens[, mark])``; the prefix
ending at a block is keyed by the labels so far. Requests carry 3 tokens
after their last block (the reply priming), so ``input = last end + 3``.
"""

from __future__ import annotations

import pytest
from replay_runs import minutes, request

from memctx import ReplayError, create_tokenizer
from memctx.policy import ModelProfile
from memctx.replay._blocks import BlockCounter, anthropic_blocks, gemini_blocks, openai_blocks
from memctx.replay._pricing import (
    AutomaticCache,
    Billing,
    ExplicitCache,
    cost,
    lifetime_seconds,
    make_cache,
)

PRIMING = 3


def send(cache: ExplicitCache | AutomaticCache, blocks: list, at: object = None) -> Billing:
    return cache.send(blocks, blocks[-1].end + PRIMING, at)  # type: ignore[arg-type]


def billing(read: int, written: int, uncached: int, broke: bool = False, long: int = 0) -> Billing:
    return Billing(read, written, long, uncached, broke)


R1 = request(("sys", 1500, "5m"), ("u1", 500, "5m"))
R2 = request(("sys", 1500, "5m"), ("u1", 500), ("a1", 300), ("u2", 200, "5m"))
R3 = request(
    ("sys", 1500, "5m"), ("u1", 500), ("a1", 300), ("u2", 200), ("a2", 100), ("u3", 400, "5m")
)


class TestAnthropicCache:
    def test_a_run_writes_its_prefix_then_reads_it_and_writes_only_what_is_new(
        self, sonnet: ModelProfile
    ) -> None:
        cache = ExplicitCache(sonnet)

        first, second, third = send(cache, R1), send(cache, R2), send(cache, R3)

        # 1: nothing stored; both marks are written: 1,500 + 500.
        assert first == billing(read=0, written=2000, uncached=3)
        # 2: the mark on u2 looks back to u1's prefix (2,000); 500 new tokens written.
        assert second == billing(read=2000, written=500, uncached=3)
        # 3: from u3's mark back to u2's prefix (2,500); a2 and u3 written.
        assert third == billing(read=2500, written=500, uncached=3)

    def test_a_prefix_is_read_with_no_more_tokens_than_it_was_written_with(
        self, sonnet: ModelProfile
    ) -> None:
        """A request counted at fewer tokens than its blocks add up to writes what it
        counts; the next request reads that much of the prefix, not the blocks' sum."""
        cache = ExplicitCache(sonnet)

        first = cache.send(R1, 1800, None)
        second = cache.send(R2, R2[-1].end + PRIMING, None)

        assert first == billing(read=0, written=1800, uncached=0)
        assert second.read == 1800
        assert second.read + second.write + second.uncached == R2[-1].end + PRIMING

    def test_the_bill_is_reads_at_a_tenth_writes_at_five_quarters_the_rest_at_base(
        self, sonnet: ModelProfile
    ) -> None:
        cache = ExplicitCache(sonnet)
        send(cache, R1)

        billed, plain = cost(send(cache, R2), sonnet)

        # $3 per million input tokens: 3 + 2,000 x 0.1 + 500 x 1.25 = 828 tokens' worth.
        assert billed == pytest.approx(828 * 3 / 1e6)
        assert plain == pytest.approx(2503 * 3 / 1e6)

    def test_a_changed_system_prompt_reads_nothing_and_is_a_cache_break(
        self, sonnet: ModelProfile
    ) -> None:
        cache = ExplicitCache(sonnet)
        send(cache, R1)
        changed = request(("sys2", 1500, "5m"), ("u1", 500), ("a1", 300), ("u2", 200, "5m"))

        broken = send(cache, changed)
        after = send(cache, changed)

        assert broken == billing(read=0, written=2500, uncached=3, broke=True)
        assert after == billing(read=2500, written=0, uncached=3)

    def test_a_shorter_request_that_reads_less_than_was_left_is_a_break(
        self, sonnet: ModelProfile
    ) -> None:
        cache = ExplicitCache(sonnet)
        send(cache, R2)

        shorter = send(cache, request(("sys", 1500, "5m"), ("u9", 100, "5m")))

        assert shorter == billing(read=1500, written=100, uncached=3, broke=True)

    def test_the_lookback_finds_a_prefix_twenty_blocks_before_a_mark(
        self, sonnet: ModelProfile
    ) -> None:
        cache = ExplicitCache(sonnet)
        send(cache, request(("sys", 1500, "5m")))
        steps = [(f"b{n}", 10) for n in range(19)]

        found = send(cache, request(("sys", 1500), *steps, ("b19", 10, "5m")))

        assert found == billing(read=1500, written=200, uncached=3)

    def test_the_lookback_misses_a_prefix_twenty_one_blocks_before_a_mark(
        self, sonnet: ModelProfile
    ) -> None:
        cache = ExplicitCache(sonnet)
        send(cache, request(("sys", 1500, "5m")))
        steps = [(f"b{n}", 10) for n in range(20)]

        missed = send(cache, request(("sys", 1500), *steps, ("b20", 10, "5m")))

        assert missed == billing(read=0, written=1710, uncached=3, broke=True)

    def test_a_prefix_under_the_minimum_is_not_written(self, sonnet: ModelProfile) -> None:
        cache = ExplicitCache(sonnet)
        short = request(("sys", 800, "5m"), ("u", 100, "5m"))

        assert send(cache, short) == billing(read=0, written=0, uncached=903)
        assert send(cache, short) == billing(read=0, written=0, uncached=903)

    def test_a_mark_past_the_minimum_writes_the_whole_prefix_before_it(
        self, sonnet: ModelProfile
    ) -> None:
        cache = ExplicitCache(sonnet)

        # The first mark (800) is under 1,024 and not written; the second (1,100) is.
        assert send(cache, request(("sys", 800, "5m"), ("u", 300, "5m"))) == billing(
            read=0, written=1100, uncached=3
        )

    def test_marks_past_the_fourth_are_not_written(self, sonnet: ModelProfile) -> None:
        cache = ExplicitCache(sonnet)
        five = request(*((f"b{n}", 1100, "5m") for n in range(5)))

        assert send(cache, five) == billing(read=0, written=4400, uncached=1103)

    def test_an_entry_expires_five_minutes_after_its_last_use(self, sonnet: ModelProfile) -> None:
        cache = ExplicitCache(sonnet)
        send(cache, R1, minutes(0))

        read_at_4 = send(cache, R1, minutes(4))  # alive, and refreshed until minute 9
        read_at_8 = send(cache, R1, minutes(8.5))  # alive thanks to the refresh
        missed = send(cache, R1, minutes(14))  # 5.5 minutes after its last use

        assert read_at_4 == billing(read=2000, written=0, uncached=3)
        assert read_at_8 == billing(read=2000, written=0, uncached=3)
        # Expired is not a break: nothing could have been read.
        assert missed == billing(read=0, written=2000, uncached=3)

    def test_a_one_hour_mark_lives_an_hour_and_is_written_at_twice_the_price(
        self, sonnet: ModelProfile
    ) -> None:
        cache = ExplicitCache(sonnet)
        hour = request(("sys", 1500, "1h"), ("u1", 500, "1h"))

        written = send(cache, hour, minutes(0))
        read = send(cache, hour, minutes(50))
        missed = send(cache, hour, minutes(111))

        assert written == billing(read=0, written=0, long=2000, uncached=3)
        assert read == billing(read=2000, written=0, uncached=3)
        assert missed.read == 0
        assert cost(written, sonnet)[0] == pytest.approx((3 + 2000 * 2.0) * 3 / 1e6)

    def test_without_times_nothing_expires(self, sonnet: ModelProfile) -> None:
        cache = ExplicitCache(sonnet)
        send(cache, R1)

        assert send(cache, R1).read == 2000

    def test_is_the_cache_of_an_explicit_profile(self, sonnet: ModelProfile) -> None:
        assert isinstance(make_cache(sonnet), ExplicitCache)


class TestOpenAICache:
    def test_a_prefix_is_read_from_1024_tokens_in_steps_of_128(
        self, gpt4o_profile: ModelProfile
    ) -> None:
        cache = AutomaticCache(gpt4o_profile)

        first = send(cache, request(("sys", 1000), ("u1", 500)))
        second = send(cache, request(("sys", 1000), ("u1", 500), ("a1", 100), ("u2", 300)))

        assert first == billing(read=0, written=0, uncached=1503)
        # The stored 1,500 tokens are served as 1,024 + 3 x 128 = 1,408.
        assert second == billing(read=1408, written=0, uncached=1903 - 1408)

    def test_cached_input_is_billed_at_the_models_discount(
        self, gpt4o_profile: ModelProfile
    ) -> None:
        cache = AutomaticCache(gpt4o_profile)
        send(cache, request(("sys", 1000), ("u1", 500)))

        billed, plain = cost(
            send(cache, request(("sys", 1000), ("u1", 500), ("a1", 100), ("u2", 300))),
            gpt4o_profile,
        )

        # $2.50 per million: 495 + 1,408 x 0.5 = 1,199 tokens' worth.
        assert billed == pytest.approx(1199 * 2.5 / 1e6)
        assert plain == pytest.approx(1903 * 2.5 / 1e6)

    @pytest.mark.parametrize(
        ("stored", "served"), [(1000, 0), (1023, 0), (1024, 1024), (1151, 1024), (1152, 1152)]
    )
    def test_the_steps_round_down(
        self, gpt4o_profile: ModelProfile, stored: int, served: int
    ) -> None:
        assert AutomaticCache(gpt4o_profile).cached(stored) == served

    def test_a_shared_prefix_under_1024_tokens_is_not_read(
        self, gpt4o_profile: ModelProfile
    ) -> None:
        cache = AutomaticCache(gpt4o_profile)
        send(cache, request(("sys", 1000), ("u1", 500)))

        assert send(cache, request(("sys", 1000), ("x", 600))).read == 0

    def test_a_changed_start_is_a_break_and_an_expired_one_is_not(
        self, gpt4o_profile: ModelProfile
    ) -> None:
        cache = AutomaticCache(gpt4o_profile)
        send(cache, request(("sys", 1000), ("u1", 900)), minutes(0))

        broken = send(cache, request(("sys2", 1000), ("u1", 900)), minutes(1))
        expired = send(cache, request(("sys3", 1000), ("u1", 900)), minutes(7))

        assert broken.broke
        assert (expired.read, expired.broke) == (0, False)

    def test_is_the_cache_of_an_automatic_profile(self, gpt4o_profile: ModelProfile) -> None:
        assert isinstance(make_cache(gpt4o_profile), AutomaticCache)


class TestGeminiCache:
    def test_a_prefix_under_the_models_minimum_is_not_read(self, gemini_pro: ModelProfile) -> None:
        cache = AutomaticCache(gemini_pro)
        send(cache, request(("sys", 4000), ("u1", 1000)))

        assert send(cache, request(("sys", 4000), ("x", 2000))).read == 0

    def test_a_prefix_over_the_minimum_is_read_whole(self, gemini_pro: ModelProfile) -> None:
        cache = AutomaticCache(gemini_pro)
        send(cache, request(("sys", 4000), ("u1", 1000)))

        served = send(cache, request(("sys", 4000), ("u1", 1000), ("a1", 7)))

        assert served == billing(read=5000, written=0, uncached=10)
        # $1.25 per million, cached input at 0.25x.
        assert cost(served, gemini_pro)[0] == pytest.approx((10 + 5000 * 0.25) * 1.25 / 1e6)


class TestBlocks:
    def test_anthropic_blocks_count_each_text_with_its_messages_overhead(self) -> None:
        counter = BlockCounter(create_tokenizer("estimate"))
        body = {
            "system": [{"type": "text", "text": "s" * 40, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "u" * 8}],
        }

        blocks = anthropic_blocks(body, counter)

        # chars/4: a system message costs 3 + 2 ("system"), a user one 3 + 1 ("user").
        assert [(b.end, b.mark) for b in blocks] == [(5 + 10, "5m"), (15 + 4 + 2, None)]

    def test_a_mark_is_no_part_of_the_key_and_a_one_hour_mark_says_so(self) -> None:
        counter = BlockCounter(create_tokenizer("estimate"))
        plain = {"messages": [{"role": "user", "content": "hello"}]}
        marked = {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "hello",
                            "cache_control": {"type": "ephemeral", "ttl": "1h"},
                        }
                    ],
                }
            ]
        }

        (a,), (b,) = anthropic_blocks(plain, counter), anthropic_blocks(marked, counter)

        assert a.key == b.key
        assert (a.mark, b.mark) == (None, "1h")

    def test_openai_blocks_are_messages_and_add_up_to_the_request_count(self) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        messages = [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hello there"},
            {"role": "assistant", "content": "Hi."},
        ]

        blocks = openai_blocks(messages, BlockCounter(tokenizer))

        assert len(blocks) == 3
        assert blocks[-1].end + PRIMING == tokenizer.count_messages(messages)

    def test_gemini_blocks_are_the_system_instruction_then_the_parts(self) -> None:
        counter = BlockCounter(create_tokenizer("estimate"))
        body = {
            "contents": [{"role": "user", "parts": [{"text": "abcd"}, {"text": "efgh"}]}],
            "config": {"system_instruction": "s" * 8},
        }

        assert [b.end for b in gemini_blocks(body, counter)] == [5 + 2, 7 + 4 + 1, 12 + 1]


class TestLifetimes:
    @pytest.mark.parametrize(
        ("value", "seconds"), [("5m", 300), ("1h", 3600), (300, 300), ("90s", 90), ("2", 2)]
    )
    def test_a_lifetime_is_read_as_seconds(self, value: object, seconds: float) -> None:
        assert lifetime_seconds(value) == seconds

    def test_a_lifetime_that_is_no_duration_is_a_replay_error(self) -> None:
        with pytest.raises(ReplayError, match="lifetimes"):
            lifetime_seconds("soon")
