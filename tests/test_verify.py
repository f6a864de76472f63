"""`tflint verify`: the A/B statistics (synthetic timings, no clocks), the equivalence checker, the fix planning,
and one end-to-end run of a small pair (needs TensorFlow; skipped cleanly without it)."""
from __future__ import annotations

import ast
import importlib.util
import json
import random
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tflint.registry import Registry, RuleMeta, default_registry
from tflint.runtime import bench
from tflint.runtime.bench import FASTER, INCONCLUSIVE, SAME, SLOWER
from tflint.runtime.verify import (
    Target,
    Variant,
    discover,
    module_options,
    order_changing,
    plan_variants,
)

ROOT = Path(__file__).resolve().parent.parent


# -- statistics on synthetic timings ----------------------------------------------------------------------------
def test_sign_test_matches_the_binomial_tail():
    assert bench.sign_test(5, 0) == pytest.approx(1 / 32)
    assert bench.sign_test(4, 1) == pytest.approx(6 / 32)
    assert bench.sign_test(0, 0) == 1.0
    assert bench.sign_test(10, 10) == pytest.approx(sum(__import__("math").comb(20, k) for k in range(10, 21)) / 2**20)


def test_percentile_interpolates_like_numpy():
    values = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6]
    for q in (0, 25, 50, 75, 100):
        assert bench.percentile(values, q) == pytest.approx(np.percentile(values, q))


def test_ratios_are_before_over_after():
    assert bench.ratios_of([(2.0, 1.0), (1.0, 2.0), (0.0, 1.0)]) == [2.0, 0.5]


def test_a_clear_speedup_is_faster_after_five_pairs():
    s = bench.summarize(bench.ratios_of([(1.9, 1.0), (2.1, 1.0), (1.7, 1.0), (2.0, 1.1), (1.8, 0.9)]))
    assert s.n == 5 and s.wins == 5 and s.ci_low >= bench.MARGIN
    assert bench.verdict(s) == FASTER


def test_four_pairs_are_never_enough():
    s = bench.summarize([2.0, 2.1, 1.9, 2.2])
    assert bench.verdict(s) == INCONCLUSIVE
    assert bench.verdict(bench.summarize([1.0, 1.01, 0.99, 1.0])) == INCONCLUSIVE
    assert bench.verdict(None) == INCONCLUSIVE


def test_a_clear_slowdown_is_slower():
    s = bench.summarize([0.5, 0.55, 0.6, 0.52, 0.58, 0.61])
    assert bench.verdict(s) == SLOWER


def test_a_small_consistent_gain_is_no_difference_within_the_margin():
    # every pair wins, but by 5-10%: inside the stated equivalence margin, so "no difference", not "faster"
    s = bench.summarize([1.05, 1.08, 1.1, 1.06, 1.07, 1.09])
    assert s.wins == 6
    assert bench.verdict(s) == SAME


def test_faster_needs_the_whole_interval_beyond_the_margin_not_only_above_one():
    # an A/A dataset pair measured with the static optimizations off on a loaded 2-core machine (load 5.3): five
    # pairs, all above 1, median 1.76. All five on one side of 1 once read "faster"; the median's interval
    # (1.05-2.59) reaches below the margin, so it is no evidence of a speedup
    aa = [1.05, 1.3, 1.76, 1.89, 2.59]
    s = bench.summarize(aa)
    assert s.median >= bench.MARGIN and s.wins == 5
    assert (s.ci_low, s.ci_high) == (1.05, 2.59)
    assert bench.verdict(s) == INCONCLUSIVE
    # the same pairs with the low one beyond the margin are a speedup
    assert bench.verdict(bench.summarize([1.25, 1.3, 1.76, 1.89, 2.59])) == FASTER
    # and the mirror image for slower
    assert bench.verdict(bench.summarize([1 / r for r in aa])) == INCONCLUSIVE
    assert bench.verdict(bench.summarize([1 / r for r in [1.25, 1.3, 1.76, 1.89, 2.59]])) == SLOWER
    # a true 1.5x effect with one noisy pair below the margin needs more pairs, then it is faster
    assert bench.verdict(bench.summarize([1.5, 1.45, 1.1, 1.6, 1.55])) == INCONCLUSIVE
    assert bench.verdict(bench.summarize([1.5, 1.45, 1.1, 1.6, 1.55, 1.4, 1.52, 1.48])) == FASTER


def test_no_difference_is_an_equivalence_test_on_the_median_not_on_single_pairs():
    # measured A/A pairs on the 2-core machine at load ~3 (0.15 s trials): single pairs from 0.61 to 1.71, a third
    # outside the margin; the median's interval is what must sit inside 0.8-1.25
    rng = random.Random(3)
    aa = [rng.choice([0.61, 0.74, 0.86, 0.93, 0.97, 0.99, 1.0, 1.01, 1.03, 1.06, 1.2, 1.37, 1.71]) for _ in range(60)]
    s = bench.summarize(aa)
    assert s.lo < 1 / bench.MARGIN and s.hi > bench.MARGIN
    assert 1 / bench.MARGIN < s.ci_low <= s.median <= s.ci_high < bench.MARGIN
    assert bench.verdict(s) == SAME
    # the same spread over only 6 pairs cannot pin the median: the interval is the whole range
    few = [0.61, 1.71, 0.99, 1.0, 1.37, 0.86]
    assert bench.verdict(bench.summarize(few)) == INCONCLUSIVE
    # ten pairs: the interval is (r2, r9), so two pairs beyond the margin on one side are tolerated, ...
    ten = [0.5, 0.82, 0.9, 0.95, 1.0, 1.0, 1.05, 1.1, 1.2, 2.0]
    sq = bench.summarize(ten)
    assert (sq.ci_low, sq.ci_high) == (0.82, 1.2)
    assert bench.verdict(sq) == SAME
    # ... not three, even with both quartiles inside the margin (the old rule's "no difference")
    ten[1], ten[8] = 0.7, 1.4
    sq = bench.summarize(ten)
    assert 0.8 < sq.q1 and sq.q3 < 1.25
    assert bench.verdict(sq) == INCONCLUSIVE


def test_aa_noise_like_the_measured_one_is_not_a_speedup():
    # single pairs from 0.45 to 2.09 around a median near 1 (the measured A/A spread)
    rng = random.Random(1)
    for _ in range(50):
        ratios = [rng.choice([0.45, 0.7, 0.9, 1.0, 1.1, 1.3, 2.09]) for _ in range(rng.randint(5, 40))]
        assert bench.verdict(bench.summarize(ratios)) in (INCONCLUSIVE, SAME)


def test_a_high_median_with_mixed_signs_is_inconclusive():
    s = bench.summarize([3.0, 0.5, 3.0, 0.5, 3.0, 0.6, 2.5])
    assert s.median >= bench.MARGIN
    assert bench.verdict(s) == INCONCLUSIVE


def test_the_median_interval_uses_order_statistics():
    assert bench.median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (1.0, 5.0)  # 5 pairs: min and max (94%)
    ten = [float(i) for i in range(10)]
    assert bench.median_interval(ten) == (1.0, 8.0)  # k=2: 97.9%; k=3 would be 89%
    assert bench.median_interval([float(i) for i in range(20)]) == (5.0, 14.0)
    assert bench.median_interval(ten, confidence=0.5) == (3.0, 6.0)
    assert bench.median_interval([2.0]) == (2.0, 2.0)


def test_pairs_are_added_until_the_verdict_is_decided():
    long = 60.0  # seconds of measuring so far: past the minimum span
    assert not bench.enough_pairs([6.0] * 9, long)  # a decided verdict, but below the minimum pairs to stop on
    # a clear effect stops at the minimum, whichever side of the margin
    assert bench.enough_pairs([6.1, 6.2, 5.9, 6.0, 6.1] * 2, long)
    assert bench.enough_pairs([0.5, 0.52, 0.49, 0.51, 0.5] * 2, long)
    # so does a clear effect with a wide spread: the verdict, not the precision of the number, ends it
    assert bench.enough_pairs([60.0, 130.0, 150.0, 100.0, 280.0] * 2, long)
    # an A/A pair well inside the margin stops too
    assert bench.enough_pairs([0.98, 1.0, 0.97, 1.02, 0.99] * 2, long)
    # the A/A dataset pair that once stopped at a median of 0.84 after these 6 pairs: its interval crosses 0.8
    aa = [0.84, 0.83, 0.9, 0.81, 1.11, 0.79]
    edge = aa + [0.79, 0.8, 0.78, 0.85, 0.83, 0.8]  # twelve pairs that stay at the edge of the margin
    assert bench.summarize(edge).ci_low <= 0.8 < bench.summarize(edge).ci_high
    assert not bench.enough_pairs(edge, long)
    # ... and near the upper edge: a true ~1.25x effect gets more pairs rather than a coin-flip verdict
    assert not bench.enough_pairs([1.23, 1.26, 1.24, 1.27, 1.25, 1.22] * 2, long)
    # more pairs that settle inside the margin end it
    assert bench.enough_pairs(aa + [0.97, 1.0, 0.99, 0.96, 1.01, 0.98, 0.95, 1.02, 0.97, 0.99, 0.98, 1.0, 0.97, 0.99],
                              long)
    # the cap ends it whatever the ratios
    assert not bench.enough_pairs([1.0, 2.0, 0.6, 1.8, 1.2] * 8, long)
    assert bench.enough_pairs([0.5, 2.0] * (bench.MAX_PAIRS // 2), long)


def test_a_decision_needs_pairs_spread_over_seconds_not_one_burst():
    # an A/A function pair at load 7.5: five 0.15 s pairs, all 1.37-1.67x, inside one burst of another process's
    # load; they decide "faster" as a verdict, but do not end the measurement until more pairs over more seconds
    burst = [1.44, 1.37, 1.67, 1.5, 1.41]
    assert bench.verdict(bench.summarize(burst)) == FASTER
    assert not bench.enough_pairs(burst, seconds=1.6)
    assert not bench.enough_pairs(burst * 2, seconds=3.2)  # ten pairs, but within 3 s
    assert bench.enough_pairs(burst * 2, seconds=bench.STOP_MIN_S)
    # the pairs after the burst pull the interval back inside the margin: no difference, not faster
    after = burst + [1.0, 0.97, 1.03, 0.99, 1.02, 0.98, 1.01, 1.0, 0.96, 1.04, 0.99, 1.01, 1.0, 0.98, 1.02]
    assert bench.verdict(bench.summarize(after)) == SAME


def test_region_of_a_ratio():
    assert bench.region(1.25) == FASTER and bench.region(0.8) == SLOWER
    assert bench.region(1.24) == SAME and bench.region(0.81) == SAME


def test_trials_are_sized_to_the_minimum_trial_time():
    assert bench.MIN_TRIAL_S == 0.15
    assert bench.runs_for(0.01) == 15
    assert bench.runs_for(0.1) == 2
    assert bench.runs_for(0.3) == 1
    assert bench.runs_for(2.0) == 1
    assert bench.runs_for(0.0) > 1000


# -- equivalence --------------------------------------------------------------------------------------------------
def _side(items, deterministic=True, truncated=False):
    return {"items": items, "deterministic": deterministic, "truncated": truncated}


ELEMENTS = [(np.arange(4, dtype=np.float32) * i, np.int64(i)) for i in range(6)]


def test_identical_outputs_are_equivalent_and_the_tolerance_is_stated():
    eq = bench.compare_outputs(_side(ELEMENTS), _side([(a.copy(), b) for a, b in ELEMENTS]))
    assert eq.status == "equivalent" and eq.ok
    assert "rtol=1e-05" in eq.detail and eq.compared == 6


def test_float_noise_within_tolerance_passes():
    after = [(a + 1e-7, b) for a, b in ELEMENTS]
    assert bench.compare_outputs(_side(ELEMENTS), _side(after)).status == "equivalent"


@pytest.mark.parametrize(
    "wrong",
    [
        [(a * 1.01, b) for a, b in ELEMENTS],  # a "fix" that scales the values
        ELEMENTS[:-1],  # a "fix" that drops an element
        [(a, b + 1) for a, b in ELEMENTS],  # wrong labels
        [(a[:3], b) for a, b in ELEMENTS],  # a different shape
        [(a, b, b) for a, b in ELEMENTS],  # a different structure
    ],
    ids=["scaled", "dropped", "labels", "shape", "structure"],
)
def test_a_deliberately_wrong_fix_is_caught(wrong):
    eq = bench.compare_outputs(_side(ELEMENTS), _side(wrong))
    assert eq.status == "not equivalent" and not eq.ok
    assert eq.detail


def test_a_wrong_fix_is_caught_even_when_order_may_change():
    wrong = [(a * 1.01, b) for a, b in reversed(ELEMENTS)]
    assert bench.compare_outputs(_side(ELEMENTS), _side(wrong), ordered=False).status == "not equivalent"


class _RunsCode:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def test_outputs_are_read_back_without_running_code(tmp_path):
    import pickle

    plain = {"items": ELEMENTS + [(np.array([b"a", b"bc"], dtype=object), {"k": np.float16(1), "r": [[1], [2, 3]]})],
             "truncated": False, "deterministic": True}
    (tmp_path / "plain.pkl").write_bytes(pickle.dumps(plain, protocol=4))
    back = bench.load_outputs(tmp_path / "plain.pkl")
    assert bench.compare_values(back["items"], plain["items"]) is None and back["deterministic"] is True

    marker = tmp_path / "marker"
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps({"items": [_RunsCode(str(marker))]}, protocol=4))
    back = bench.load_outputs(tmp_path / "evil.pkl")
    assert not marker.exists()
    assert "builtins.exec" in back["uncomparable"]
    assert bench.compare_outputs(back, _side(ELEMENTS)).status == "not comparable"


def test_reordering_fails_unless_documented():
    shuffled = [ELEMENTS[i] for i in (3, 0, 5, 1, 4, 2)]
    assert bench.compare_outputs(_side(ELEMENTS), _side(shuffled), ordered=True).status == "not equivalent"
    eq = bench.compare_outputs(_side(ELEMENTS), _side(shuffled), ordered=False)
    assert eq.status == "equivalent" and not eq.ordered and "multiset" in eq.detail


def test_reordered_records_inside_batches_compare_as_rows():
    rows = [np.array([i, i * 10], dtype=np.int64) for i in range(8)]
    batches_a = [np.stack(rows[0:4]), np.stack(rows[4:8])]
    order = [5, 0, 7, 2, 1, 6, 3, 4]
    batches_b = [np.stack([rows[i] for i in order[0:4]]), np.stack([rows[i] for i in order[4:8]])]
    assert bench.compare_outputs(_side(batches_a), _side(batches_b), ordered=True).status == "not equivalent"
    eq = bench.compare_outputs(_side(batches_a), _side(batches_b), ordered=False)
    assert eq.status == "equivalent" and "rows" in eq.detail
    # ... but a lost row is still caught
    batches_c = [batches_b[0], batches_b[1][:3]]
    assert bench.compare_outputs(_side(batches_a), _side(batches_c), ordered=False).status == "not equivalent"


def test_dicts_bytes_and_none():
    a = [{"x": np.float32(1.5), "name": b"abc"}, None]
    assert bench.compare_outputs(_side([a]), _side([[{"x": np.float32(1.5), "name": b"abc"}, None]])).ok
    assert not bench.compare_outputs(_side([a]), _side([[{"x": np.float32(1.5), "name": b"abd"}, None]])).ok
    assert not bench.compare_outputs(_side([a]), _side([[{"y": np.float32(1.5), "name": b"abc"}, None]])).ok


def test_random_outputs_are_not_claimed_equal():
    eq = bench.compare_outputs(_side(ELEMENTS, deterministic=False), _side(ELEMENTS))
    assert eq.status == "not comparable" and eq.ok and "not claimed" in eq.detail
    eq = bench.compare_outputs(_side(ELEMENTS), _side(ELEMENTS, deterministic=False))
    assert eq.status == "not comparable"


def test_functions_returning_nothing_are_reported_as_such():
    eq = bench.compare_outputs(_side([None]), _side([None]))
    assert eq.status == "no outputs"


def test_uncomparable_values_are_reported():
    eq = bench.compare_outputs({"uncomparable": "a value of type Foo"}, _side(ELEMENTS))
    assert eq.status == "not comparable" and "Foo" in eq.detail


def test_an_order_changing_fix_passes_only_when_its_rule_documents_it():
    documented = RuleMeta("TFL901", "reorders-documented", "s", True, ("unsafe",), raw={"order-changing": True})
    silent = RuleMeta("TFL902", "reorders-silently", "s", True, ("unsafe",), raw={})
    reg = Registry([documented, silent])
    shuffled = [ELEMENTS[i] for i in (1, 0, 2, 3, 5, 4)]
    for codes, expected in ((["TFL901"], "equivalent"), (["TFL902"], "not equivalent")):
        ordered = not order_changing(codes, reg)
        assert bench.compare_outputs(_side(ELEMENTS), _side(shuffled), ordered=ordered).status == expected


def test_shipped_order_changing_rules_are_marked():
    reg = default_registry()
    meta = reg.get("TFL109")
    if meta is None:
        pytest.skip("TFL109 not in the registry yet")
    assert meta.raw.get("order-changing") is True


# -- planning the fixed side (static: no TensorFlow) --------------------------------------------------------------
PAIR = textwrap.dedent(
    """\
    import tensorflow as tf

    __tflint_verify__ = {"mode": "cold", "rtol": 1e-4}


    def make():
        ds = tf.data.Dataset.range(10)
        ds = ds.map(lambda x: tf.strings.as_string(x * 2))
        return ds
    """
)


def test_the_fixed_side_is_tflints_own_fix(tmp_path):
    from tflint.config import Config

    f = tmp_path / "pair.py"
    f.write_text(PAIR)
    reg = default_registry()
    variants, fired, _ = plan_variants(Target(f, "make", ["TFL101"]), PAIR, reg, Config())
    assert fired == ["TFL101"]
    assert len(variants) == 1
    v = variants[0]
    assert v.fix == "tflint" and v.codes == ["TFL101"] and v.factory == "make" and v.applied == 1
    assert "num_parallel_calls" in v.text and "num_parallel_calls" not in PAIR


def test_a_manual_fix_is_used_only_without_an_automatic_one(tmp_path):
    from tflint.config import Config

    # TFL203 function-created-in-loop fires and has no automatic fix
    text = textwrap.dedent(
        """\
        import tensorflow as tf

        def make():
            def run():
                for _ in range(10):
                    double = tf.function(lambda t: t * 2)
                    double(tf.constant(1.0))
            return run, ()

        def make_fixed():
            double = tf.function(lambda t: t * 2)
            def run():
                for _ in range(10):
                    double(tf.constant(1.0))
            return run, ()
        """
    )
    f = tmp_path / "pair.py"
    f.write_text(text)
    reg = default_registry()
    variants, fired, _ = plan_variants(Target(f, "make", ["TFL203"]), text, reg, Config())
    assert fired == ["TFL203"]
    assert [(v.fix, v.factory, v.codes) for v in variants] == [("manual", "make_fixed", ["TFL203"])]
    assert variants[0].text == text
    # with an automatic fix, the manual one is ignored
    fixable = PAIR + "\n\ndef make_fixed():\n    return tf.data.Dataset.range(10)\n"
    variants, _, _ = plan_variants(Target(f, "make", ["TFL101"]), fixable, reg, Config())
    assert [(v.fix, v.factory) for v in variants] == [("tflint", "make")]
    # and a manual fix is not verified when no selected rule fires at all
    quiet = "import tensorflow as tf\n\ndef make():\n    return tf.data.Dataset.range(3)\n\ndef make_fixed():\n    return tf.data.Dataset.range(3)\n"
    assert plan_variants(Target(f, "make", ["TFL101"]), quiet, reg, Config())[0] == []


def test_a_rule_that_fires_without_a_measured_fix_is_named_with_its_reason(tmp_path):
    """A file where one rule's fix is verified and another rule fires with no fix (TFL104 on from_generator): the
    report names the unmeasured rule and why, in the text notes and in the JSON."""
    from tflint.config import Config
    from tflint.runtime.verify import render_table, unmeasured

    text = textwrap.dedent(
        """\
        import tensorflow as tf

        def rows():
            yield from range(8)

        def make():
            ds = tf.data.Dataset.from_generator(rows, output_signature=tf.TensorSpec([], tf.int64))
            return ds.map(lambda x: tf.strings.as_string(x * 2))
        """
    )
    f = tmp_path / "pair.py"
    f.write_text(text)
    reg = default_registry()
    t = Target(f, "make", ["TFL101", "TFL104"])
    variants, fired, _ = plan_variants(t, text, reg, Config())
    assert fired == ["TFL101", "TFL104"] and [v.codes for v in variants] == [["TFL101"]]
    ((code, why),) = unmeasured(t, fired, variants, reg)
    assert code == "TFL104" and "no `make_fixed`" in why and "not measured" in why
    assert unmeasured(t, fired, variants + [Variant(["TFL104"], text, "make_fixed", "manual", 0)], reg) == []
    assert f"pair.py::make: {why}" in render_table([], [], [(t, code, why)])


def test_nothing_to_verify_without_a_fix(tmp_path):
    from tflint.config import Config

    text = "import tensorflow as tf\n\ndef make():\n    return tf.data.Dataset.range(3)\n"
    f = tmp_path / "pair.py"
    f.write_text(text)
    variants, fired, _ = plan_variants(Target(f, "make", ["TFL101"]), text, default_registry(), Config())
    assert variants == [] and fired == []


def test_module_options_are_read_statically():
    assert module_options(PAIR) == {"mode": "cold", "rtol": 1e-4}
    assert module_options("__tflint_verify__ = compute()\n") == {}
    assert module_options("x = (\n") == {}


def test_a_folder_selects_each_pairs_rule_by_file_name(tmp_path):
    (tmp_path / "map-without-parallel-calls.py").write_text(PAIR)
    (tmp_path / "other.py").write_text(PAIR)
    (tmp_path / "_helpers.py").write_text(PAIR)
    (tmp_path / "no_factory.py").write_text("x = 1\n")
    targets = discover(str(tmp_path), [], default_registry())
    assert [(t.path.name, t.codes) for t in targets] == [("map-without-parallel-calls.py", ["TFL101"]), ("other.py", None)]
    with pytest.raises(ValueError):
        discover(str(tmp_path / "other.py"), [], default_registry())


def test_a_pair_names_its_rule_and_is_pending_while_that_rule_is_missing(tmp_path):
    from tflint.config import Config

    named = PAIR.replace('{"mode": "cold", "rtol": 1e-4}', '{"rule": "TFL101"}')
    (tmp_path / "x.py").write_text(named)
    (t,) = discover(f"{tmp_path / 'x.py'}::make", [], default_registry())
    assert t.codes == ["TFL101"] and t.missing == []
    unknown = PAIR.replace('{"mode": "cold", "rtol": 1e-4}', '{"rule": "TFL999"}')
    (tmp_path / "map-without-parallel-calls.py").write_text(unknown)
    (tmp_path / "x.py").unlink()
    (t,) = discover(str(tmp_path), [], default_registry())
    assert t.codes == [] and t.missing == ["TFL999"]
    assert plan_variants(t, unknown, default_registry(), Config()) == ([], [], [])


def test_every_bench_rule_has_a_pair():
    folder = ROOT / "fixtures" / "bench"
    for meta in default_registry():
        if meta.bench:
            assert (folder / f"{meta.name}.py").is_file(), f"{meta.code} {meta.name} has bench: true but no pair"


def test_verify_stays_out_of_tensorflow_in_the_parent(tmp_path):
    import subprocess
    import sys

    code = ("import sys, tflint.runtime.verify, tflint.runtime.bench; "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# -- one end-to-end run -------------------------------------------------------------------------------------------
@pytest.mark.runtime
@pytest.mark.slow
def test_end_to_end_verify_of_a_small_pair(tmp_path, capsys):
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    from tflint.cli import main

    pair = tmp_path / "pair.py"
    pair.write_text(textwrap.dedent(
        """\
        import tensorflow as tf


        def make():
            ds = tf.data.Dataset.range(64)
            ds = ds.map(lambda x: tf.reduce_sum(tf.sin(tf.cast(tf.range(500), tf.float32) + tf.cast(x, tf.float32))))
            return ds
        """
    ))
    # a fixed pair count, not a budget: how many pairs fit in N seconds depends on the machine's load
    rc = main(["verify", f"{pair}::make", "--rule", "TFL101", "--json", "--pairs", "5", "--timeout", "600"])
    out = json.loads(capsys.readouterr().out)
    (r,) = out["results"]
    assert r["status"] == "ok", r["error"]
    assert r["rules"] == [{"code": "TFL101", "name": "map-without-parallel-calls"}]
    assert r["fix"] == "tflint" and r["fixes_applied"] == 1
    assert r["equivalence"]["status"] == "equivalent" and r["equivalence"]["compared"] == 64
    assert r["kind"] == "dataset" and r["device"]["tensorflow"]
    first = r["measurements"][0]
    assert first["static_optimizations"] is True and first["trials"] == 5 and first["stopped"] == "pairs"
    assert out["settings"]["pairs"] == 5
    assert first["verdict"] in (FASTER, SLOWER, SAME, INCONCLUSIVE)
    assert first["before"]["throughput"] > 0 and first["after"]["throughput"] > 0
    assert rc == (1 if r["failed"] else 0)


# -- equivalence includes types ------------------------------------------------------------------------------------
def test_a_changed_dtype_is_a_difference_even_with_equal_values():
    a = {"items": [np.float32(1.5), np.array([1, 2], np.int32)]}
    b = {"items": [np.float64(1.5), np.array([1, 2], np.int32)]}
    eq = bench.compare_outputs(a, b)
    assert eq.status == "not equivalent" and "float32" in eq.detail and "float64" in eq.detail
    c = {"items": [np.float32(1.5), np.array([1, 2], np.int64)]}
    assert "int64" in bench.compare_outputs(a, c).detail
    assert bench.compare_outputs(a, {"items": [np.float32(1.5), np.array([1, 2], np.int32)]}).status == "equivalent"


def test_element_specs_must_agree_in_dtype_and_compatible_shape():
    spec = lambda *leaves: [list(x) for x in leaves]  # noqa: E731
    items = {"items": [1]}
    before = {**items, "spec": spec(("[0]", "float32", [None, 3]), ("[1]", "int64", [None]))}
    known = {**items, "spec": spec(("[0]", "float32", [32, 3]), ("[1]", "int64", [32]))}
    assert bench.compare_outputs(before, known).status == "equivalent"  # a dimension made known
    wider = {**items, "spec": spec(("[0]", "float64", [None, 3]), ("[1]", "int64", [None]))}
    eq = bench.compare_outputs(before, wider)
    assert eq.status == "not equivalent" and "element_spec[0]: dtype float32 before the fix, float64 after" in eq.detail
    other = {**items, "spec": spec(("[0]", "float32", [None, 4]), ("[1]", "int64", [None]))}
    assert "shape" in bench.compare_outputs(before, other).detail
    fewer = {**items, "spec": spec(("[0]", "float32", [None, 3]))}
    assert "structure" in bench.compare_outputs(before, fewer).detail


@pytest.mark.runtime
@pytest.mark.slow
def test_a_fix_that_raises_where_the_original_ran_is_broken_and_exits_1(tmp_path, capsys):
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    from tflint.cli import main

    # TFL202 offers no fix here (the function indexes a Python list with the counter): the module's documented manual
    # fix, `make_fixed`, passes the counter as a tensor anyway, and raises
    pair = tmp_path / "scale_loop.py"
    pair.write_text(textwrap.dedent(
        """\
        import tensorflow as tf

        SCALES = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


        @tf.function
        def scaled(x, i):
            return x * SCALES[i]


        def make():
            x = tf.ones([2])

            def run():
                out = []
                for i in range(8):  # more than a short loop: TFL202 reports it
                    out.append(scaled(x, i).numpy().tolist())
                return out

            return run, [()]


        def make_fixed():
            x = tf.ones([2])

            def run():
                out = []
                for i in range(8):  # more than a short loop: TFL202 reports it
                    out.append(scaled(x, tf.constant(i)).numpy().tolist())
                return out

            return run, [()]
        """
    ))
    rc = main(["verify", f"{pair}::make", "--rule", "TFL202", "--pairs", "5", "--timeout", "600"])
    out = capsys.readouterr().out
    assert rc == 1
    row = next(line for line in out.splitlines() if line.startswith("scale_loop "))
    assert row.split()[3] == "BROKEN" and row.split()[-2] == "BROKEN", row  # the equal and verdict columns
    assert "broken: the fixed code raises where the original ran" in out and "list indices" in out


def test_json_says_why_a_pair_is_pending(tmp_path, capsys):
    """`verify --json` with nothing to verify explains it as the text report does (the reason, not only
    "pending")."""
    from tflint.cli import main

    pair = tmp_path / "pair.py"
    pair.write_text("import tensorflow as tf\n\n\ndef make():\n    return tf.data.Dataset.range(4)\n")
    rc = main(["verify", f"{pair}::make", "--rule", "TFL101", "--json"])
    out = json.loads(capsys.readouterr().out)
    (p,) = out["pending"]
    assert rc == 2 and p["reason"] == "no selected rule fires (TFL101): pending"


def test_changed_statements_span_the_whole_statement():
    from tflint.runtime.verify import changed_statements

    before = "def f(ds):\n    ds = (ds.map(g)\n          .batch(2))\n    return ds\n\n\ndef h():\n    return 1\n"
    after = before.replace(".map(g)", ".map(g, num_parallel_calls=tf.data.AUTOTUNE)")
    assert changed_statements(before, after) == [(2, 3)]
    assert changed_statements(before, before) == []


@pytest.mark.runtime
@pytest.mark.slow
def test_a_fix_in_code_the_factory_never_runs_is_not_measured(tmp_path, capsys):
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("TensorFlow is not installed")
    from tflint.cli import main

    pair = tmp_path / "unused_helper.py"
    pair.write_text(textwrap.dedent(
        """\
        import tensorflow as tf


        def make():
            return tf.data.Dataset.range(64).batch(8)


        def never_called():
            return tf.data.Dataset.range(64).map(lambda x: x * 2).batch(8)
        """
    ))
    rc = main(["verify", f"{pair}::make", "--rule", "TFL106", "--json", "--pairs", "5", "--timeout", "600"])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    (r,) = out["results"]
    assert r["status"] == "not run" and r["measurements"] == []
    assert "line(s) 9, which the factory never runs" in r["note"]
    # nothing was measured: not a pass (exit 2, as `check` for a path with nothing to check), and it says so
    assert rc == 2 and out["verified"] == 0
    assert out["nothing_verified"].startswith("the fix is in code the factory never runs")
    assert "tflint: error: nothing was verified: the fix is in code the factory never runs" in captured.err


def test_nothing_verified_is_said_and_is_not_a_pass():
    """Every fix "not run", or no fix to apply: `nothing_verified` gives the reason (exit 2); one pair measured,
    broken or not equivalent is a verification (its own exit code decides)."""
    from tflint.runtime.verify import Target, VariantResult, nothing_verified

    def result(status: str) -> VariantResult:
        return VariantResult("pair.py", "make", ["TFL101"], ["map-without-parallel-calls"], "tflint", status=status)

    t = Target(Path("pair.py"), "make", ["TFL101"])
    assert "all 2 fixes are in code the factory never runs" in nothing_verified([result("not run")] * 2, [])
    assert nothing_verified([], [(t, [])]).startswith("no selected rule has a fix to apply here")
    assert nothing_verified([result("not run"), result("ok")], []) is None
    assert nothing_verified([], []) is None


def test_rates_are_in_the_originals_units_and_agree_with_the_speedup():
    """A fix that batches (8 items per run become 1) must not read as 8x slower by its rate: both rates count the
    original's items, so their ratio is the ratio of the median run times."""
    from tflint.runtime.verify import Measurement

    m = Measurement("steady", True, pairs=[(2.0, 1.0), (2.2, 1.1), (1.8, 0.9)], items=(8.0, 1.0))
    assert m.throughput(0) == pytest.approx(8 / 2.0) and m.throughput(1) == pytest.approx(8 / 1.0)
    assert m.throughput(1) / m.throughput(0) == pytest.approx(m.summary.median)
    # noisy pairs whose separately taken medians disagree with the paired one: the rates follow the pairs
    noisy = Measurement("steady", True, pairs=[(0.6, 0.6), (0.6, 0.6), (1.26, 1.26), (1.26, 1.26), (1.26, 0.6)],
                        items=(300.0, 300.0))
    assert noisy.summary.median == pytest.approx(1.0)
    assert bench.median([p[0] for p in noisy.pairs]) / bench.median([p[1] for p in noisy.pairs]) == pytest.approx(2.1)
    assert noisy.throughput(1) == pytest.approx(noisy.throughput(0))


def test_an_undecided_measurement_says_it_ran_out_of_budget_with_the_spread_it_saw():
    from tflint.runtime.verify import Measurement, VariantResult, render_table

    noisy = [(1.0, r) for r in (0.5, 2.0, 1.0, 0.6, 1.7, 1.0, 0.55, 1.9)]  # before/after: ratios 2.0, 0.5, ...
    m = Measurement("steady", True, pairs=noisy, items=(10.0, 10.0), stopped="budget", load=6.5)
    assert m.verdict == INCONCLUSIVE
    why = m.why_inconclusive()
    assert why.startswith("inconclusive after 8 pairs: the machine was too noisy")
    assert "0.50-2.00x" in why and "load average up to 6.5" in why and "--budget" in why
    assert m.to_json()["reason"] == why and m.to_json()["speedup"]["ci_low"] == m.summary.ci_low
    r = VariantResult("aa.py", "make", ["TFL203"], ["function-created-in-loop"], "manual", measurements=[m],
                      kind="function", unit="calls/s")
    assert why in render_table([r], [])
    # a decided one has no such note; fewer than the minimum pairs says so
    calm = Measurement("steady", True, pairs=[(1.0, 1.0)] * 6, items=(1.0, 1.0), stopped="decided")
    assert calm.verdict == SAME and calm.why_inconclusive() == "" and calm.to_json()["reason"] is None
    few = Measurement("steady", True, pairs=[(1.0, 1.0)] * 3, items=(1.0, 1.0), stopped="budget")
    assert "fewer than 5" in few.why_inconclusive()


def test_a_traced_function_counts_as_run_by_its_name():
    """AutoGraph runs a converted copy of a tf.function's body from a generated file: its lines never run under
    the original's name, so the function's name (recorded from the converted frame) says it ran."""
    from tflint.runtime.verify import statement_ran

    text = ("import tensorflow as tf\n\n\n@tf.function\ndef f(x):\n    if x > 0:\n        y = x\n    else:\n"
            "        y = -x\n    return y\n\n\ndef unused():\n    return 1\n\n\nA = 1\n")
    assert statement_ran(text, (6, 9), {"def:f"}) and not statement_ran(text, (6, 9), {"def:make"})
    assert not statement_ran(text, (14, 14), {"def:f"})
    assert statement_ran(text, (17, 17), set())  # module-level code ran when the module was loaded


def test_the_repeat_benchmarks_cases_exist_and_its_aa_pairs_are_the_same_work():
    """bench/verify_repeat.py names FILE::FACTORY cases; its A/A pairs must be verified against a `FACTORY_fixed`
    that does the same work (a manual fix), never against a fix of tflint's that could change it."""
    from tflint.config import Config

    spec = importlib.util.spec_from_file_location("verify_repeat", ROOT / "bench" / "verify_repeat.py")
    repeat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(repeat)
    reg = default_registry()
    kinds = {"faster": 0, "aa": 0, "near 1x": 0}
    for name, (target, ok) in repeat.CASES.items():
        (t,) = discover(str(ROOT / target), [], reg)
        text = t.path.read_text(encoding="utf-8")
        variants, fired, _ = plan_variants(t, text, reg, Config())
        assert variants, f"{name}: nothing to verify in {target}"
        if name.startswith("aa-"):
            kinds["aa"] += 1
            assert ok == (SAME,)
            assert [(v.fix, v.factory) for v in variants] == [("manual", t.factory + "_fixed")]
            bodies = {f.name: ast.dump(ast.Module(f.body, [])) for f in ast.parse(text).body
                      if isinstance(f, ast.FunctionDef)}
            assert bodies[t.factory] == bodies[t.factory + "_fixed"], f"{name}: the A/A sides differ"
        elif ok == (FASTER,):
            kinds["faster"] += 1
        else:
            kinds["near 1x"] += 1
            assert FASTER not in ok and SLOWER not in ok
    assert kinds["faster"] >= 3 and kinds["aa"] >= 2 and kinds["near 1x"] >= 1
