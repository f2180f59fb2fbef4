"""bench/rounds.py: the statistics behind bench/run.sh --rounds (ratios judged per round; a bar
met only when the lower quartile of the per-round ratios clears it)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import rounds  # noqa: E402


def test_ratio_is_taken_per_round_not_of_the_medians():
    # lithe and the peer drift together (a host getting busier): each round's ratio is 2.0, while
    # the ratio of the two medians over rounds would pair different rounds
    lithe = {1: 1.0, 2: 2.0, 3: 4.0, 4: 8.0, 5: 16.0}
    peer = {r: 2.0 * v for r, v in lithe.items()}
    st = rounds.ratio_over_rounds(lithe, peer)
    assert st["n"] == 5 and st["median"] == 2.0 and st["min"] == 2.0 and st["max"] == 2.0 and st["q1"] == 2.0
    # a rate (GFLOP/s): lithe / peer
    st = rounds.ratio_over_rounds({1: 30.0, 2: 60.0}, {1: 10.0, 2: 30.0}, higher_is_better=True)
    assert st["min"] == 2.0 and st["max"] == 3.0 and st["median"] == 2.5


def test_lower_quartile_decides():
    # per-round ratios 0.9, 1.05, 1.1, 1.2, 1.3: the median clears 1.0, the lower quartile (1.05)
    # too; with two rounds under the bar the quartile does not, whatever the median says
    peer = {r: 1.0 for r in range(1, 6)}
    ok = {1: 1 / 0.9, 2: 1 / 1.05, 3: 1 / 1.1, 4: 1 / 1.2, 5: 1 / 1.3}
    st = rounds.ratio_over_rounds(ok, peer)
    assert abs(st["median"] - 1.1) < 1e-12 and abs(st["q1"] - 1.05) < 1e-12 and st["q1"] >= 1.0
    bad = {1: 1 / 0.9, 2: 1 / 0.95, 3: 1 / 1.1, 4: 1 / 1.2, 5: 1 / 1.3}
    st = rounds.ratio_over_rounds(bad, peer)
    assert st["median"] > 1.0 and st["q1"] < 1.0


def test_only_rounds_both_ran_count():
    st = rounds.ratio_over_rounds({1: 1.0, 2: 1.0, 3: 1.0}, {2: 3.0, 3: 5.0, 4: 100.0})
    assert st["n"] == 2 and st["min"] == 3.0 and st["max"] == 5.0
    assert rounds.ratio_over_rounds({1: 1.0}, {2: 1.0}) is None


def test_tables_show_the_median_round():
    recs = [{"key": "k", "rec": {"median_ms": m, "round": r}} for r, m in ((1, 5.0), (2, 1.0), (3, 3.0), (4, 9.0))]
    recs.append({"key": "k", "rec": {"error": "x", "round": 5}})  # no median: not a measurement
    shown, per = rounds.by_round(recs)
    assert sorted(per["k"]) == [1, 2, 3, 4]
    assert shown["k"]["median_ms"] == 3.0  # the lower middle of 1, 3, 5, 9
