"""The statistics of bench/run.py's rounds (--rounds N): every runner runs once per round, so each
measurement has one median per round, and a ratio one value per round (peer and lithe from the
same round, minutes apart at most). A ratio is reported as the median of its per-round values
with their min-max, and it meets a bar only when its lower quartile does: on a shared host one
lucky round must not decide a verdict."""
import numpy


def by_round(results):
    """key -> {round: record} for the measurements (records with a median); and key -> the record of
    the median round (the lower middle one for an even count), which the tables show.
    key = (row key, workload, group)."""
    rounds = {}
    for r in results:
        if "median_ms" in r["rec"]:
            rounds.setdefault(r["key"], {})[r["rec"].get("round", 1)] = r["rec"]
    shown = {}
    for k, per in rounds.items():
        recs = sorted(per.values(), key=lambda r: r["median_ms"])
        shown[k] = recs[(len(recs) - 1) // 2]
    return shown, rounds


def lower_quartile(xs):
    return float(numpy.percentile(numpy.asarray(xs, dtype=numpy.float64), 25))


def ratio_over_rounds(lithe, peer, higher_is_better=False):
    """lithe, peer: {round: value} (ms, or GFLOP/s when higher_is_better). The ratio of each round
    both ran in (peer / lithe for times, lithe / peer for rates: > 1 means lithe is faster), and
    its median, min, max and lower quartile; None when no round has both."""
    common = sorted(set(lithe) & set(peer))
    if not common:
        return None
    rs = [(lithe[r] / peer[r]) if higher_is_better else (peer[r] / lithe[r]) for r in common]
    return {"n": len(rs), "median": float(numpy.median(rs)), "min": min(rs), "max": max(rs),
            "q1": lower_quartile(rs), "lithe": float(numpy.median([lithe[r] for r in common])),
            "peer": float(numpy.median([peer[r] for r in common]))}
