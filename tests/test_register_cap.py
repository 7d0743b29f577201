"""The register cap (``min_blocks``): the budget of a residency, the rule that asks one program
more a SM where registers alone bind, and the launch that keeps a cap only where ptxas holds it
without spilling more (``impls.plan.capped_kernel`` over fake compiled kernels)."""

import types

import pytest
import torch

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls import plan as planner
from impls import registry
from specs.inputs import make_inputs
from specs.problem import DecodeProblem, ProblemError

KB = 1024


@pytest.mark.parametrize("programs, warps, regs", [(1, 4, 255), (2, 4, 255), (3, 4, 168), (4, 4, 128),
                                                    (6, 4, 80), (2, 8, 128), (3, 8, 80), (16, 4, 32)])
def test_the_budget_of_a_residency_is_what_the_register_file_holds_that_many_programs_at(programs, warps,
                                                                                        regs):
    assert planner.registers_for(programs, warps) == regs
    assert planner.residency(regs, 0, warps) >= programs  # the budget holds them ...
    if regs < planner.MAX_THREAD_REGS:  # ... and 8 more (the allocation step) would not
        assert planner.residency(regs + 8, 0, warps) < programs


def test_the_rule_asks_one_program_more_only_where_registers_alone_bind_and_the_grid_waits():
    many = 10_000  # programs of a grid many times what 132 SMs hold
    # 186 registers on 4 warps: 2 a SM; 40 KB of shared memory would hold 5
    assert planner.residency(186, 40 * KB, 4) == 2
    assert planner.register_cap(186, 40 * KB, 4, many, 132) == 3
    # a grid the SMs hold already (132 x 2 programs): a cap would buy no program that runs
    assert planner.register_cap(186, 40 * KB, 4, 264, 132) == 0
    assert planner.register_cap(186, 40 * KB, 4, 265, 132) == 3
    # shared memory binds (100 KB: 2 a SM): no cap
    assert planner.register_cap(186, 100 * KB, 4, many, 132) == 0
    # threads bind: 8 programs of 8 warps fill the SM's 64 warps whatever the registers
    assert planner.register_cap(32, 0, 8, many, 132) == 0
    # a small kernel: 96 registers hold 5 of 4 warps, the cap asks 6 (80 registers)
    assert planner.register_cap(96, 20 * KB, 4, many, 132) == 6


def fake(regs, spills, smem=20 * KB):
    return types.SimpleNamespace(n_regs=regs, n_spills=spills, metadata=types.SimpleNamespace(shared=smem))


# grids of 4096 and 8 programs (batch x 8 KV heads, one row block of 16): on the CPU's nominal 4
# SMs, many waves and one that 2 programs a SM hold
MANY = types.SimpleNamespace(problem=DecodeProblem(32, 8, 64, (20,) * 512), device=torch.device("cpu"))
FEW = types.SimpleNamespace(problem=DecodeProblem(32, 8, 64, (20,)), device=torch.device("cpu"))


class TooFew(Exception):
    """A compiler's error for a register cap below what an instruction of the kernel needs."""


def capped_kernel(compile_with, min_blocks, inputs=MANY, num_warps=4):
    return planner.capped_kernel(compile_with, inputs, num_warps, 16, min_blocks, TooFew)


def compiler(uncapped, capped_spills=None, capped_regs=None, needs=0, broken=False):
    """compile_with(cap): the uncapped kernel, or under a cap (ptxas's count within it, or
    ``capped_regs`` where ptxas would not meet it); ``TooFew`` under a cap below ``needs``, and
    under any cap where the kernel is ``broken`` (uncapped: a RuntimeError, its own)."""
    calls = []

    def compile_with(cap):
        calls.append(cap)
        if broken and cap is None:
            raise RuntimeError("the kernel's own error")
        if broken or (cap is not None and cap < needs):  # laid out as Triton's PTXASError
            print("// the PTX, printed by the compiler")
            raise TooFew(f"PTXAS error: Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas fatal   : "
                         f"(C7602) Insufficient registers ({cap}): try {needs} or higher\nptxas fatal   : "
                         "Ptx assembly aborted due to errors\n\nRepro command: ptxas x.ptx -o x.o\n")
        if cap is None:
            return uncapped
        spills = uncapped.n_spills if capped_spills is None else capped_spills
        return fake(capped_regs or min(cap, uncapped.n_regs), spills, uncapped.metadata.shared)
    return compile_with, calls


def test_the_launch_keeps_the_rules_cap_where_ptxas_holds_it_without_a_spill():
    compile_with, calls = compiler(fake(186, 0))
    kernel, blocks, cap = capped_kernel(compile_with, None)
    assert (blocks, cap, kernel.n_regs, calls) == (3, 168, 168, [None, 168])
    # a spill under the cap: the uncapped kernel, no cap
    compile_with, calls = compiler(fake(186, 0), capped_spills=64)
    kernel, blocks, cap = capped_kernel(compile_with, None)
    assert (blocks, cap, kernel.n_regs) == (0, None, 186)
    # a capped kernel that does not reach the residency asked for: the uncapped kernel, no cap
    compile_with, calls = compiler(fake(186, 0), capped_regs=176)
    kernel, blocks, cap = capped_kernel(compile_with, None)
    assert (blocks, cap, kernel.n_regs, calls) == (0, None, 186, [None, 168])
    # shared memory binds: compiled once, no cap
    compile_with, calls = compiler(fake(186, 0, smem=100 * KB))
    assert capped_kernel(compile_with, None)[1:] == (0, None) and calls == [None]
    # a grid the SMs hold uncapped: compiled once, no cap
    compile_with, calls = compiler(fake(186, 0))
    assert capped_kernel(compile_with, None, FEW)[1:] == (0, None) and calls == [None]


def test_a_min_blocks_asked_for_sets_the_cap_and_zero_none():
    compile_with, calls = compiler(fake(186, 0))
    assert capped_kernel(compile_with, 4)[1:] == (4, 128) and calls == [128]
    compile_with, calls = compiler(fake(186, 0))
    assert capped_kernel(compile_with, 0)[1:] == (0, None) and calls == [None]


def test_a_cap_the_compiler_cannot_meet_is_dropped_by_the_rule_and_refused_when_asked_for(capsys):
    # the rule's cap (168 registers) below what an instruction needs: the uncapped kernel, no cap
    compile_with, calls = compiler(fake(186, 0), needs=176)
    kernel, blocks, cap = capped_kernel(compile_with, None)
    assert (blocks, cap, kernel.n_regs, calls) == (0, None, 186, [None, 168])
    # the same binary again (a second prepare of the launch): the refusal remembered, not rebuilt
    uncapped = fake(186, 0)
    uncapped.hash = "a-binary"
    compile_with, calls = compiler(uncapped, needs=176)
    assert capped_kernel(compile_with, None)[1:] == (0, None) and calls == [None, 168]
    compile_with, calls = compiler(uncapped, needs=176)
    assert capped_kernel(compile_with, None)[1:] == (0, None) and calls == [None]
    # asked for: refused as a config the problem cannot take, naming the knob, the cap and why
    compile_with, calls = compiler(fake(186, 0), needs=176)
    with pytest.raises(ProblemError, match=r"config: min_blocks=4 caps a thread at 128 registers \(4 warps"
                                           r".*needs: ptxas fatal   : \(C7602\) Insufficient registers \(128\): "
                                           r"try 176 or higher$"):
        capped_kernel(compile_with, 4)
    assert calls == [128, None]  # compiled uncapped too: the cap is what fails
    assert "PTX" not in capsys.readouterr().out  # the compiler's dump of a refused cap dropped
    # a kernel that fails uncapped as well: its own error, not a refused config
    compile_with, calls = compiler(fake(186, 0), broken=True)
    with pytest.raises(RuntimeError, match="the kernel's own error"):
        capped_kernel(compile_with, 4)


@pytest.mark.parametrize("min_blocks", [-1, 9, 2.0, True])
def test_a_min_blocks_the_sm_cannot_hold_is_refused_before_a_build(min_blocks):
    compile_with, calls = compiler(fake(186, 0))
    with pytest.raises(ProblemError, match=r"min_blocks=.*programs a SM, an int from 0 \(no cap\) to 8"):
        capped_kernel(compile_with, min_blocks, num_warps=8)
    assert calls == []


@pytest.mark.parametrize("impl", ["triton/dense", "triton/split-k"])
def test_the_interpreter_refuses_a_min_blocks_the_gpu_would_refuse(impl):
    inputs = make_inputs(DecodeProblem(8, 2, 64, (40,)), 0)
    out, lse = inputs.new_outputs()
    with pytest.raises(ProblemError, match=r"min_blocks=99: programs a SM"):
        registry.get(impl).prepare(inputs, out, lse, config={"min_blocks": 99})
