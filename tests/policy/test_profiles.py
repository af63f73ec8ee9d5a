"""Model profiles: the bundled table, lookups, and profiles of your own."""

from __future__ import annotations

import attrs
import pytest

from memctx import PolicyError, UnknownModelError, create_tokenizer
from memctx.policy import (
    MODEL_PROFILES,
    CacheRules,
    ModelProfile,
    _profiles,
    model_profile,
    register_model_profile,
)


@pytest.fixture(autouse=True)
def no_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_profiles, "_registered", {})


def custom(name: str = "my-model", **changes: object) -> ModelProfile:
    return attrs.evolve(model_profile("gpt-4o"), name=name, **changes)


class TestBundled:
    @pytest.mark.parametrize(
        "name",
        ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-5", "gpt-5-mini", "o3", "o4-mini",
         "claude-opus-4-7", "claude-opus-4-5", "claude-sonnet-4-6", "claude-sonnet-4-5",
         "claude-haiku-4-5", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro"],
    )  # fmt: skip
    def test_the_models_the_issue_names_are_there(self, name: str) -> None:
        assert model_profile(name).context_window > 0

    def test_every_tokenizer_can_be_created(self) -> None:
        for profile in MODEL_PROFILES.values():
            assert create_tokenizer(profile.tokenizer).name

    def test_anthropic_follows_its_cache_rules(self) -> None:
        sonnet = model_profile("claude-sonnet-4-6")
        assert (sonnet.cache.kind, sonnet.cache.max_breakpoints, sonnet.cache.lookback_blocks) == (
            "explicit", 4, 20,
        )  # fmt: skip
        assert (sonnet.cache_read_multiplier, sonnet.cache_write_multiplier) == (0.1, 1.25)
        assert sonnet.cache_write_1h_multiplier == 2.0
        assert sonnet.cache.lifetimes == (300.0, 3600.0)

    def test_minimum_cacheable_prefixes_are_per_model(self) -> None:
        names = ("claude-sonnet-4-6", "claude-opus-4-5", "claude-haiku-4-5", "claude-3-5-haiku")
        minimums = {n: model_profile(n).cache.min_cacheable_tokens for n in names}
        assert minimums == {
            "claude-sonnet-4-6": 1024, "claude-opus-4-5": 4096,
            "claude-haiku-4-5": 4096, "claude-3-5-haiku": 2048,
        }  # fmt: skip

    def test_openai_caches_automatically_in_steps_of_128(self) -> None:
        gpt = model_profile("gpt-4o")
        assert (gpt.cache.kind, gpt.cache.min_cacheable_tokens, gpt.cache.step_tokens) == (
            "automatic", 1024, 128,
        )  # fmt: skip
        assert gpt.cache_read_multiplier == 0.5
        assert model_profile("gpt-5").cache_read_multiplier == 0.1

    def test_the_table_is_read_only(self) -> None:
        with pytest.raises(TypeError):
            MODEL_PROFILES["x"] = custom()  # type: ignore[index]


class TestLookup:
    def test_a_dated_snapshot_finds_its_model(self) -> None:
        assert model_profile("claude-haiku-4-5-20251001").name == "claude-haiku-4-5"
        assert model_profile("gpt-4o-2024-08-06").name == "gpt-4o"

    def test_a_profile_is_accepted_where_a_name_is(self) -> None:
        mine = custom()
        assert model_profile(mine) is mine

    def test_an_unknown_name_names_the_close_matches(self) -> None:
        with pytest.raises(UnknownModelError, match="claude-sonnet-4-6") as caught:
            model_profile("claude-sonet-4-6")
        assert caught.value.model == "claude-sonet-4-6"

    def test_a_non_name_is_a_policy_error(self) -> None:
        with pytest.raises(PolicyError, match="model"):
            model_profile(42)  # type: ignore[arg-type]


class TestRegister:
    def test_a_registered_profile_is_found_by_name(self) -> None:
        register_model_profile(custom("acme-1"))
        assert model_profile("acme-1").name == "acme-1"

    def test_a_registered_profile_wins_over_a_bundled_one(self) -> None:
        register_model_profile(custom("gpt-4o", input_price=1.0))
        assert model_profile("gpt-4o").input_price == 1.0
        assert MODEL_PROFILES["gpt-4o"].input_price == 2.5

    def test_only_a_profile_can_be_registered(self) -> None:
        with pytest.raises(PolicyError, match="profile"):
            register_model_profile("gpt-4o")  # type: ignore[arg-type]


class TestValidation:
    @pytest.mark.parametrize(
        ("field", "value"),
        [("context_window", 0), ("provider", "mistral"), ("input_price", -1.0), ("name", " "),
         ("max_output_tokens", True)],
    )  # fmt: skip
    def test_a_bad_value_names_its_field(self, field: str, value: object) -> None:
        with pytest.raises(PolicyError, match=field) as caught:
            custom(**{field: value})
        assert caught.value.option == field

    def test_cache_rules_check_their_kind(self) -> None:
        with pytest.raises(PolicyError, match="kind"):
            CacheRules(kind="sometimes", min_cacheable_tokens=1024)  # type: ignore[arg-type]
