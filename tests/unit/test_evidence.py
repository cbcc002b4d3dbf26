"""Verdicts on evidence (corral/measure/evidence.py): the sign test over
paired runs, its interval for the median ratio, and which measure decides."""

from corral.measure import evidence
from corral.measure.evidence import FASTER, NOISE, SLOWER


def test_five_pairs_all_one_way_are_conclusive_and_four_are_not():
    assert evidence.timed([1.0] * 5, [0.9] * 5).verdict == FASTER      # p = 1/32
    assert evidence.timed([1.0] * 5, [1.1] * 5).verdict == SLOWER
    assert evidence.timed([1.0] * 4, [0.9] * 4).verdict == NOISE       # p = 1/16


def test_pairs_that_go_both_ways_are_within_noise_whatever_the_median():
    # the 11 ms treeadd case: a median of 0.996 over pairs split 5 to 6
    reference = [1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00]
    candidate = [0.97, 1.01, 0.98, 1.02, 1.004, 0.99, 1.03, 1.005, 0.96, 1.02, 1.01]
    t = evidence.timed(reference, candidate)
    assert t.verdict == NOISE and t.wins == 4 and t.losses == 7
    assert "faster in 4 of 11 pairs" in t.describe()


def test_a_verdict_is_settled_once_no_further_pairs_could_change_it():
    # Of five planned pairs: a win and a loss rule out five in one direction.
    assert evidence.timed([1.0, 1.0], [0.9, 1.1]).settled(3)
    # Two wins may still become five.
    assert not evidence.timed([1.0, 1.0], [0.9, 0.9]).settled(3)
    # Five wins of five: conclusive, and nothing is left to run.
    assert evidence.timed([1.0] * 5, [0.9] * 5).settled(0)
    # Twelve wins of fifteen are conclusive; eleven wins with one pair to
    # come may yet be, or not.
    eleven = evidence.timed([1.0] * 14, [0.9] * 11 + [1.1] * 3)
    assert not eleven.settled(1)
    assert evidence.timed([1.0] * 14, [0.9] * 10 + [1.1] * 4).settled(1)
    # Twelve wins of twelve with three to come: conclusive whatever those
    # three say; ten of ten with five to come are not (ten of fifteen).
    assert evidence.timed([1.0] * 12, [0.9] * 12).settled(3)
    assert not evidence.timed([1.0] * 10, [0.9] * 10).settled(5)


def test_the_interval_is_made_of_order_statistics():
    t = evidence.Timed(tuple(1 + i / 100 for i in range(20)))
    lo, hi = t.interval()
    # 20 pairs, 90% two-sided: ranks 6 and 15 (P(X <= 5) = 2.1%)
    assert (round(lo, 2), round(hi, 2)) == (1.05, 1.14)
    assert evidence.Timed((1.1, 0.9, 1.0)).interval() == (0.9, 1.1)


def test_a_conclusive_clock_decides_over_simulation():
    v = evidence.decide(-0.10, evidence.timed([1.0] * 6, [1.1] * 6))
    assert (v.outcome, v.by) == (SLOWER, "time")
    assert "-10.0% simulated cycles" in v.evidence


def test_a_clock_within_noise_leaves_the_decision_to_simulation():
    noisy = evidence.timed([1.0] * 6, [0.97, 1.03, 0.98, 1.02, 0.99, 1.01])
    v = evidence.decide(-0.17, noisy)
    assert (v.outcome, v.by) == (FASTER, "simulation") and abs(v.gain - 0.17) < 1e-9
    assert evidence.decide(+0.002, noisy).outcome == NOISE       # inside the margin
    assert (evidence.decide(None, noisy).outcome, evidence.decide(None, noisy).by) == (NOISE, "time")
    assert evidence.decide(None, None).by == "neither"


def test_caches_scaled_to_the_heap_decide_only_where_the_stated_ones_see_nothing():
    scaled = "D1 4 KiB, LL 128 KiB"
    v = evidence.decide([-0.001, -0.12], None, scaled=scaled)
    assert (v.outcome, v.by) == (FASTER, "simulation") and abs(v.gain - 0.12) < 1e-9
    assert "(-12.0% on caches scaled to the training heap: D1 4 KiB, LL 128 KiB)" in v.evidence
    assert evidence.decide([-0.06, +0.05], None, scaled=scaled).outcome == FASTER
    assert evidence.decide([+0.001, +0.05], None, scaled=scaled).outcome == SLOWER
    assert evidence.decide([+0.001, -0.002], None, scaled=scaled).outcome == NOISE
    assert evidence.decide([+0.006, -0.13], None, scaled=scaled).outcome == SLOWER
