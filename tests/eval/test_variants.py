"""What an eval compares: models under configs, the labels, the tables (pure, and the config files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.eval.classify import wilson
from bot.eval.report import comparisons, rate
from bot.eval.variants import HarnessConfig, load_config, variants


def test_a_config_file_sets_budget_and_loop_keys_only(tmp_path: Path) -> None:
    path = tmp_path / "tight.yml"
    path.write_text("budget:\n  max_steps: 5\nloop:\n  slice_tokens: 400\n  reserve: 0.2\n")
    assert load_config(path) == HarnessConfig("tight", {"max_steps": 5}, {"slice_tokens": 400, "reserve": 0.2})
    path.write_text("loop:\n  slice_tokens: lots\nretries: 3\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert (
        "loop.slice_tokens" in str(err.value)
        and "retries" in str(err.value)
        and "(keys: name, budget, loop)" in str(err.value)
    )
    with pytest.raises(ConfigError, match="cannot read it"):
        load_config(tmp_path / "absent.yml")


def test_labels_name_the_config_only_when_there_is_one_to_tell_apart() -> None:
    a, b = HarnessConfig("a", {}, {}), HarnessConfig("b", {}, {})
    assert [v.label for v in variants(["oracle", "replay:t.jsonl"], [])] == ["oracle", "replay:t.jsonl"]
    assert [v.slug for v in variants(["replay:/x/t.jsonl"], [])] == ["replay_x_t.jsonl"]
    assert [v.label for v in variants(["m", "n"], [a, b])] == ["m@a", "n@a", "m@b", "n@b"]
    with pytest.raises(ConfigError, match="--config names must differ"):
        variants(["m"], [a, a])
    with pytest.raises(ConfigError, match="given twice"):
        variants(["m", "m"], [])


def test_tables_lock_the_harness_to_compare_models_and_the_model_to_compare_harnesses() -> None:
    grid = [("m@a", "m", "a"), ("n@a", "n", "a"), ("m@b", "m", "b"), ("n@b", "n", "b")]
    assert [(t.locked, t.variants) for t in comparisons(grid)] == [
        ("harness: a", ["m@a", "n@a"]),
        ("harness: b", ["m@b", "n@b"]),
        ("model: m", ["m@a", "m@b"]),
        ("model: n", ["n@a", "n@b"]),
    ]
    assert [t.title for t in comparisons([("m", "m", "default")])] == ["Results, harness locked (config: default)"]


def test_a_rate_cell_shows_the_count_and_the_interval() -> None:
    assert rate(wilson(5, 10)) == "5/10 50 % (24–76)"
    assert rate(wilson(0, 0)) == "—"
