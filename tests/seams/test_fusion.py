"""Hybrid search's fusion: the lexical ranking counts more, the top ranks
count most."""

from __future__ import annotations

import pytest

from memrules._core.errors import ConfigError
from memrules.seams._fusion import MAX_FUSED_SCORE, RRF_K, reciprocal_rank_fusion


def test_first_in_the_lexical_ranking_outranks_first_in_the_dense_one() -> None:
    fused = reciprocal_rank_fusion([["a", "c"], ["b", "c"]])
    assert [i for i, _ in fused] == ["c", "b", "a"]
    assert [i for i, _ in reciprocal_rank_fusion([["a"], ["b"]], weights=(1, 1))] == ["a", "b"]


def test_agreement_lower_down_beats_one_first_place_alone() -> None:
    dense = ["only-dense", "x", "both"]
    lexical = ["y", "z", "both"]
    fused = dict(reciprocal_rank_fusion([dense, lexical]))
    assert fused["both"] > fused["only-dense"]
    assert fused["both"] == pytest.approx(1 / (RRF_K + 3) + 1.5 / (RRF_K + 3))


def test_the_highest_score_is_first_in_both() -> None:
    ((_, score),) = reciprocal_rank_fusion([["a"], ["a"]])
    assert score == MAX_FUSED_SCORE
    assert reciprocal_rank_fusion([["a"], ["b"], ["a"]])[0] == ("a", 2 / (RRF_K + 1))


def test_one_weight_per_ranking() -> None:
    with pytest.raises(ConfigError, match="weights"):
        reciprocal_rank_fusion([["a"], ["b"]], weights=(1.0,))
