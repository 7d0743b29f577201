"""The tuning cache (harness.tuning): its key, when an entry is used and when it is ignored, and
the search over a backend's declared space."""

from __future__ import annotations

import json
import types

import pytest
import torch

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from harness import results, tuning
from impls import registry
from impls.launch import Knob, Space
from impls.registry import Backend, Capabilities, Impl, Launch
from specs.problem import DecodeProblem, ProblemError

CPU = torch.device("cpu")
TRITON = registry.get("triton/split-k")


@pytest.fixture
def cache_file(tmp_path, monkeypatch):
    path = tmp_path / "tuning.json"
    monkeypatch.setenv(tuning.CACHE_ENV, str(path))
    return path


def test_shape_class_groups_neighbours_and_splits_what_matters():
    a = DecodeProblem(32, 8, 128, (3000, 2900), layout="paged", page_size=16)
    assert tuning.shape_class(a) == tuning.shape_class(DecodeProblem(32, 8, 128, (4000, 10),
                                                                     layout="paged", page_size=16))
    for other in (DecodeProblem(32, 8, 128, (3000, 3000), layout="paged", page_size=16),  # uniform
                  DecodeProblem(32, 8, 64, (3000, 2900), layout="paged", page_size=16),
                  DecodeProblem(32, 4, 128, (3000, 2900), layout="paged", page_size=16),
                  DecodeProblem(32, 8, 128, (3000, 2900), layout="paged", page_size=32),
                  DecodeProblem(32, 8, 128, (3000, 2900, 1)),  # dense, batch 3 -> 4
                  DecodeProblem(32, 8, 128, (5000, 2900), layout="paged", page_size=16)):
        assert tuning.shape_class(other) != tuning.shape_class(a), other.label()


RULE = {"block_n": 32, "num_warps": 4, "num_stages": 2, "merge": "kernel"}  # a stand-in rule


def measure_by(times: dict, rule: dict = RULE):
    """A stand-in for the harness's measurement: a median per block_n, None for a wrong one;
    (median, knobs), the rule's knobs for ``None``."""
    def measure(config):
        config = rule if config is None else config
        us = times.get(config.get("block_n"))
        return None if us is None else (us, config)
    return measure


def test_tune_searches_the_space_and_later_runs_use_the_cache(cache_file):
    p = DecodeProblem(8, 2, 64, (300, 40))
    options, source = tuning.choose(TRITON, p, {}, tune=True, use_cache=True, device=CPU,
                                    measure=measure_by({32: 5.0, 64: 3.0, 128: None}))
    assert source["config_source"] == "tuned" and options["config"]["block_n"] == 64
    assert 1 < source["tuned_configs"] < len(TRITON.backend.space.configs("split-k", "dense"))
    stored = json.loads(cache_file.read_text())
    assert len(stored) == 1 and next(iter(stored.values()))["config"] == options["config"]
    # the row and the entry say what the rule took and what the search timed: the rule (block_n
    # 32) at 5 us, the pick at 3, a wrong candidate (128) as None
    assert source["tuning_rule_us"] == next(iter(stored.values()))["rule_us"] == 5.0
    assert source["tuning_best_us"] == 3.0 and len(source["tuning_trace"]) == source["tuned_configs"]
    assert [RULE, 5.0] == source["tuning_trace"][0]
    assert {c["block_n"]: us for c, us in source["tuning_trace"]}[128] is None
    # a later run of a neighbouring shape: from the cache, saying so
    neighbour = DecodeProblem(8, 2, 64, (400, 30))
    later, source = tuning.choose(TRITON, neighbour, {}, tune=False, use_cache=True, device=CPU,
                                  measure=None)
    assert later["config"] == options["config"]
    assert source == {"config_source": "cache", "tuned_on": p.label()}
    # --no-tuning-cache, a given config, another variant: the rule or the user's choice
    assert tuning.choose(TRITON, neighbour, {}, False, False, CPU, None)[1] == {"config_source": "rule"}
    given = tuning.choose(TRITON, neighbour, {"config": {"block_n": 32}}, False, True, CPU, None)
    assert given == ({"config": {"block_n": 32}}, {"config_source": "given"})
    dense = registry.get("triton/dense")
    assert tuning.choose(dense, neighbour, {}, False, True, CPU, None)[1]["config_source"] == "rule"


def test_an_entry_is_ignored_when_the_kernel_source_or_the_gpu_changed(cache_file, monkeypatch):
    p = DecodeProblem(8, 2, 64, (300, 40))
    tuning.store(TRITON, "split-k", p, "cpu", {"block_n": 32}, 1.0, 0.5, 3)
    assert tuning.lookup(tuning.load(), TRITON, "split-k", p, "cpu")["config"] == {"block_n": 32}
    assert tuning.lookup(tuning.load(), TRITON, "split-k", p, "NVIDIA H200 (132 SMs)") is None
    monkeypatch.setattr(tuning, "source_digest", lambda module: "a-changed-kernel")
    assert tuning.lookup(tuning.load(), TRITON, "split-k", p, "cpu") is None
    _, source = tuning.choose(TRITON, p, {}, False, True, CPU, None)
    assert source["config_source"] == "rule"


def test_the_source_digest_follows_the_backend_folder(tmp_path):
    """Different backends, different digests; the digest is stable within a process."""
    assert tuning.source_digest("impls.triton.split_k") == tuning.source_digest("impls.triton.one_pass")
    assert tuning.source_digest("impls.triton.split_k") != tuning.source_digest("impls.cupy.split_k")


def test_the_search_walks_one_knob_at_a_time_to_the_best():
    """A cost with one best configuration, reached from the rule's by single-knob moves, far
    short of timing the whole space; a rule that is already the best is kept."""
    space = TRITON.backend.space
    everything = space.configs("split-k", "paged")
    cost = {"block_n": {16: 4, 32: 3, 64: 2, 128: 0}, "block_h": {16: 0, 32: 1, 64: 2, 128: 3},
            "num_warps": {4: 1, 8: 0},
            "num_stages": {2: 2, 3: 0, 4: 1}, "gather": {"page": 0, "token": 1},
            "merge": {"kernel": 1, "fused": 0}, "dim_split": {0: 0, 1: 1},
            "min_blocks": {0: 0, 2: 1, 3: 2, 4: 1}}
    rule = {"block_n": 32, "block_h": 32, "num_warps": 4, "num_stages": 2, "gather": "token",
            "merge": "kernel", "dim_split": 0, "min_blocks": 0}
    seen = []

    def measure(config):
        config = rule if config is None else config
        seen.append(config)
        return 10 + sum(cost[k][v] for k, v in config.items()), config

    best, best_us, tried, rule_us, trace = tuning.search(TRITON, "split-k", "paged", measure)
    assert best == {"block_n": 128, "block_h": 16, "num_warps": 8, "num_stages": 3, "gather": "page",
                    "merge": "fused", "dim_split": 0, "min_blocks": 0} and best_us == 10
    assert tried == len(seen) == len(trace) and tried < len(everything) / 2
    # the trace: every configuration timed once, the rule's first, with its median
    assert trace[0] == (rule, rule_us) and rule_us == 10 + sum(cost[k][v] for k, v in rule.items())
    assert (best, best_us) in trace and all(us == 10 + sum(cost[k][v] for k, v in c.items())
                                            for c, us in trace)
    # a rule that differs from the optimum in every knob: one move a knob reaches it still
    rule.update(block_n=32, block_h=32, num_warps=4, num_stages=2, gather="token", merge="kernel",
                dim_split=1, min_blocks=3)
    best, best_us, *_ = tuning.search(TRITON, "split-k", "paged", measure)
    assert best_us == 10 and all(best[k] != rule[k] for k in rule)
    # the rule is the optimum: one round of neighbours, none better, the rule kept
    best, _, tried, *_ = tuning.search(TRITON, "split-k", "paged",
                                       lambda c: (10 if c is None else 11, c or {"rule": 1}))
    assert best == {"rule": 1}


def test_a_search_with_nothing_correct_falls_back_to_the_rule(cache_file):
    p = DecodeProblem(8, 2, 64, (300, 40))
    options, source = tuning.choose(TRITON, p, {}, True, True, CPU, measure_by({}))
    assert "config" not in options and source["config_source"] == "rule"
    assert "no configuration" in source["tuning_note"] and not cache_file.exists()


AUTOTUNED = Backend(name="toy-autotuned", summary="", requires=("torch",), cpu_mode="torch",
                    space=Space(Knob("block_n", (32, 64)), Knob("num_warps", (4, 8))))


@pytest.mark.parametrize("replay_us,rule_us", [(1241.6, 705.9), (300.0, 705.9), (None, None),
                                               (None, 705.9), (300.0, None)])
def test_an_autotuners_pick_is_cached_only_where_its_replayed_knobs_beat_the_rule(
        cache_file, monkeypatch, replay_us, rule_us):
    """An own autotuner sets more than the space's knobs (here ``waves``); a later run replays
    the knobs alone, another kernel. ``evaluate`` times that replay and the rule's configuration
    (never the autotuner again) and caches the faster; a replay that loses leaves a note, and
    with neither running, nothing is cached."""
    from harness import runner
    from harness.runner import RunSpec, evaluate
    from specs.inputs import make_inputs
    from specs.reference import reference

    us_of = {64: replay_us, 32: rule_us}  # by block_n: the tuner's pick, the rule's
    autotuned = []

    def prepare(inputs, out, lse, config=None, tune=False):
        ref = reference(inputs)
        if tune:
            autotuned.append(1)
            cfg = {"block_n": 64, "num_warps": 8, "waves": 3}
        else:
            cfg = {"block_n": 32, "num_warps": 4, **(config or {})}
            if us_of[cfg["block_n"]] is None:
                raise ProblemError(f"block_n={cfg['block_n']}: refused")

        def run():
            out.copy_(ref.out)
            lse.copy_(ref.lse)
        run.us = us_of[cfg["block_n"]]  # what the stand-in timer reads
        return Launch(run, cfg, tuning_s=0.5 if tune else None)

    def timer(device):  # the cold-L2 protocol's shape, the launch's own median
        return lambda run: {"cold": types.SimpleNamespace(estimate=types.SimpleNamespace(median=run.us))}

    monkeypatch.setitem(globals(), "_autotuned_prepare", prepare)
    monkeypatch.setattr(runner, "tuning_timer", timer)
    impl = Impl(AUTOTUNED, "one-pass", __name__, Capabilities(frozenset({"dense"})),
                options=("config", "tune"), entry="_autotuned_prepare")
    problem = DecodeProblem(4, 2, 64, (9,), dtype="float32")
    inputs = make_inputs(problem, 0)
    spec = RunSpec([problem.to_dict()], [], 0, {"tune": True}, False, True, "/dev/null", None)
    row = evaluate(0, impl, problem, inputs, reference(inputs), spec, None, {})
    assert row["status"] == "PASS" and row["config_source"] == "tuned" and autotuned == [1]
    stored = json.loads(cache_file.read_text()) if cache_file.exists() else {}
    if replay_us is None and rule_us is None:
        assert not stored and "nothing cached" in row["tuning_note"]
        return
    entry = next(iter(stored.values()))
    if replay_us is None:  # the replay refused: the rule's kept
        assert entry["config"] == {"block_n": 32, "num_warps": 4} and entry["median_us"] == rule_us
        assert "did not run correctly (the rule's: 705.9 us)" in row["tuning_note"]
    elif rule_us is not None and replay_us > rule_us:
        assert entry["config"] == {"block_n": 32, "num_warps": 4} and entry["median_us"] == rule_us
        assert "measured 1241.6 us against the rule's 705.9 us" in row["tuning_note"]
    else:
        assert entry["config"] == {"block_n": 64, "num_warps": 8} and entry["median_us"] == replay_us
        assert "tuning_note" not in row
    assert entry["tried"] == 2 and entry["rule_us"] == rule_us  # what the pick was weighed against


def test_a_corrupt_cache_is_named_not_used(cache_file):
    cache_file.write_text("{oops")
    p = DecodeProblem(8, 2, 64, (300, 40))
    _, source = tuning.choose(TRITON, p, {}, False, True, CPU, None)
    assert source["config_source"] == "rule" and tuning.CACHE_ENV in source["tuning_note"]


def test_size_classes_of_the_read_limit():
    """Eight classes per octave: a row's bytes at most 1/8 below its class's; the class's read
    time scales to the row's bytes."""
    from harness import bandwidth

    for n in (1 << 20, (1 << 20) + 1, 3_000_000, 123_456_789, 7 << 30):
        c = bandwidth.size_class(n)
        assert n <= c < n * (1 + 1 / 8) + 1024, n
        assert bandwidth.size_class(c) == c
    limits = {bandwidth.size_class(3_000_000): {"us": 10.0, "probe": "x"}}
    assert bandwidth.read_limit_us(limits, 3_000_000) == pytest.approx(
        10.0 * 3_000_000 / bandwidth.size_class(3_000_000))
    assert bandwidth.read_limit_us({}, 3_000_000) is None


def test_size_matched_times_each_probe_kernel_once_per_class(monkeypatch):
    """Backends that share a read probe are timed once; the faster read wins; past NBYTES the
    class's time is the asymptote's."""
    import types

    from harness import bandwidth

    made = []

    def read_probe(x, fill=False):
        made.append((x.numel(), fill))
        return lambda: None

    shared = types.SimpleNamespace(__name__="probe_module", read_probe=read_probe)
    monkeypatch.setattr(bandwidth, "_read_probes",
                        lambda: {"a": shared, "b": shared, "c": "not measured: no GPU"})

    class Timer:  # the probe's call reads faster than torch's sum
        def __init__(self, *args, **kwargs):
            pass

        def __call__(self, call):
            us = 1.0 if call() is None else 2.0
            return {"cold": types.SimpleNamespace(estimate=types.SimpleNamespace(median=us))}

    monkeypatch.setattr(bandwidth, "GpuTimer", Timer)
    found = bandwidth.size_matched(torch.device("cpu"), [3_000_000, 3_000_001, 8 << 30], 1000.0)
    small = bandwidth.size_class(3_000_000)
    assert found[small] == {"us": 1.0, "probe": "a"}
    assert made == [(small // 2, True)]  # one probe kernel, one class
    assert found[bandwidth.size_class(8 << 30)]["probe"] == "asymptote"


@pytest.mark.parametrize("problem", [
    DecodeProblem(8, 2, 80, (37, 100, 5)),  # dense: a head's rows strided over the others
    DecodeProblem(8, 2, 64, (37, 100, 5), layout="paged", page_size=3),  # rows gathered by page
    DecodeProblem(8, 2, 64, (300, 70), layout="paged", page_size=16, window=50),  # poisoned rows before
], ids=["dense", "paged3", "window"])
def test_layout_read_reads_every_attended_row_once_and_nothing_else(problem):
    """impls.triton.read_probe.layout_read (harness.bandwidth.layout_reads' kernel, in Triton's
    interpreter): its sums are those of exactly the attended K and V rows, read through the
    layout; a row it skipped or read twice, or a poisoned row (past a sequence's end, before a
    window's start) it read, would change them."""
    pytest.importorskip("triton")
    from impls.triton.read_probe import layout_read
    from specs.inputs import make_inputs

    inputs = make_inputs(problem, device="cpu")
    call, partials = layout_read(inputs)
    call()
    want = 0.0
    for b in range(problem.batch):
        first = problem.window_starts[b] if problem.window is not None else 0
        k, v = inputs.rows(b, first, problem.seq_lens[b])
        want += (k.double() + v.double()).sum().item()
    assert partials.double().sum().item() == pytest.approx(want, rel=1e-5, abs=1e-3)


def test_layout_reads_times_a_shared_probe_module_once(monkeypatch):
    """harness.bandwidth.layout_reads: backends sharing a read probe are timed once; a probe
    without ``layout_read`` is skipped, one that fails is recorded, not raised."""
    import types

    from harness import bandwidth

    calls = []

    def layout_read(inputs):
        calls.append(inputs)
        return (lambda: None), None

    def broken(inputs):
        raise RuntimeError("no GPU")

    shared = types.SimpleNamespace(__name__="probe_module", layout_read=layout_read)
    monkeypatch.setattr(bandwidth, "_read_probes", lambda: {
        "a": shared, "b": shared, "c": types.SimpleNamespace(__name__="plain"),
        "d": types.SimpleNamespace(__name__="broken", layout_read=broken)})

    class Timer:
        def __call__(self, call):
            call()
            return {"cold": types.SimpleNamespace(estimate=types.SimpleNamespace(median=3.0))}

    found = bandwidth.layout_reads("inputs", Timer())
    assert found["a"] == 3.0 and "b" not in found and "c" not in found
    assert found["d"].startswith("not measured: RuntimeError")
    assert calls == ["inputs"]


def test_layout_limits_take_the_fastest_layout_read_once_per_problem(monkeypatch):
    """harness.bandwidth.layout_limits: a problem drawn with the run's seed, its fastest probe's
    layout read kept under a key every process computes alike (a problem listed twice is
    measured once); a problem whose inputs do not fit, that no probe reads, or that fails, says
    why, and the others are measured; the rows find their problem's time by the same key."""
    import dataclasses

    import specs.inputs
    from harness import bandwidth
    from specs import workloads

    small, other = workloads.heldout_problems(7)[:2]
    big = dataclasses.replace(small, seq_lens=[small.seq_lens[0] + 1] + list(small.seq_lens[1:]))
    bad = dataclasses.replace(small, seq_lens=[small.seq_lens[0] + 2] + list(small.seq_lens[1:]))
    drawn = []

    def draw(p, seed, device):
        if p is bad:
            raise RuntimeError("CUDA error: an illegal memory access")
        drawn.append((p, seed))
        return types.SimpleNamespace(p=p)
    monkeypatch.setattr(bandwidth, "GpuTimer", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (1000, 2000))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    import harness.runner
    monkeypatch.setattr(harness.runner, "input_bytes", lambda p: 10**6 if p is big else 10)
    monkeypatch.setattr(specs.inputs, "make_inputs", draw)
    times = {bandwidth.problem_key(small): {"cupy": 5.0, "triton": 7.5},
             bandwidth.problem_key(other): {"cupy": "not measured: ValueError: no rows"}}
    monkeypatch.setattr(bandwidth, "layout_reads",
                        lambda inputs, timer: times[bandwidth.problem_key(inputs.p)])

    found = bandwidth.layout_limits(torch.device("cuda"), [small, small, bad, other, big], seed=11)
    assert drawn == [(small, 11), (other, 11)]  # once each; the one too big never drawn
    assert "RuntimeError: CUDA error" in found[bandwidth.problem_key(bad)]["note"]  # the rest stand
    assert found[bandwidth.problem_key(small)] == {"us": 5.0, "probe": "cupy"}
    assert "ValueError: no rows" in found[bandwidth.problem_key(other)]["note"]
    assert "do not fit" in found[bandwidth.problem_key(big)]["note"]
    same = workloads.heldout_problems(7)[0]  # drawn again: another object, the same key
    assert bandwidth.layout_limit_us(found, same) == 5.0
    assert bandwidth.layout_limit_us(found, other) is None
    assert bandwidth.layout_limit_us({}, small) is None


def test_tuning_gaps_names_the_knobs_a_tuner_moved_and_what_each_move_gained(tmp_path, capsys):
    """scripts/tuning_gaps.py: from a --tune run's rows (their search's rule and pick) or a cache
    run against a rule run, each changed cell with its knob moves, then each move's count and
    median change per backend; a cell left on the rule's knobs is 'kept'."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("tuning_gaps", tuning.ROOT / "scripts/tuning_gaps.py")
    gaps = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gaps)
    a, b = DecodeProblem(8, 2, 64, (300, 40)), DecodeProblem(8, 2, 64, (900, 40))

    def row(problem, us, config, **kw):
        return {"impl": "triton/split-k", "backend": "triton", "variant": "split-k",
                "problem": problem.label(), "spec": problem.to_dict(),
                "status": "PASS", "median_us": us, "config": config, **kw}
    rule = {"block_n": 64, "num_warps": 4, "num_items": 7}  # num_items: a report, not a knob
    tuned = [row(a, 8.0, {"block_n": 32, "num_warps": 4, "num_items": 9},
                 config_source="cache"),
             row(b, 12.0, dict(rule), config_source="cache")]
    cells = gaps.cells_of_runs(tuned, [row(a, 10.0, rule), row(b, 12.1, rule)])
    assert cells[0][2:] == ({"block_n": 64, "num_warps": 4}, 10.0, {"block_n": 32, "num_warps": 4}, 8.0)
    assert cells[1][2] == cells[1][4]  # kept
    # a rule run made with the cache on holds cache rows: those are not the rule's
    assert len(gaps.cells_of_runs(tuned, [row(a, 10.0, rule), row(b, 9.0, rule, config_source="cache")])) == 1
    trace = [[{"block_n": 64}, 10.0], [{"block_n": 32}, 7.5], [{"block_n": 16}, None]]
    run = [row(a, 7.6, {"block_n": 32}, config_source="tuned", tuning_trace=trace,
               tuning_rule_us=10.0, tuning_best_us=7.5)]
    assert results.tuned_cells(run) == [("triton/split-k", a.label(), {"block_n": 64}, 10.0,
                                         {"block_n": 32}, 7.5)]
    # the run's own tables say the same, per backend and move
    prov = {"command": "python -m harness run --tune"}
    assert "## What tuning changed" in results.render_markdown(prov, run)
    from harness import html
    assert "<h2>What tuning changed</h2>" in html.render(prov, run)
    assert results.knob_moves(results.tuned_cells(run))[1] == [
        ["triton", "block_n", "64 -> 32", "1", "-25.0"]]
    assert "## What tuning changed" not in results.render_markdown(prov, tuned)  # no search here
    for folder, rows in (("rules", [row(a, 10.0, rule), row(b, 12.1, rule)]), ("cache", tuned)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "results.json").write_text(json.dumps({"provenance": {}, "rows": rows}))
    assert gaps.main([str(tmp_path / "cache"), "--rules", str(tmp_path / "rules")]) == 0
    out = capsys.readouterr().out
    assert "block_n 64->32" in out and "-20.0%" in out and "kept" in out and "median change %" in out
    assert [line.split()[1:] for line in out.splitlines() if line.startswith("triton ")] == \
        [["block_n", "64", "->", "32", "1", "-20.0"], ["kept", "1", "-0.8"]]
    assert gaps.main([str(tmp_path / "rules")]) == 2  # no tuned rows: said, not an empty table
