"""Large inputs: shared IR operands, streamed printing, streamed trace, deadlines.

Memory figures live in benchmarks/parse_speed.py; here the behaviour that
keeps memory bounded is checked structurally: results are printed before the
next kernel is analysed and are not kept, the printer writes item by item,
the parser shares immutable operands, and deadlines skip kernels (listed with
the reason) instead of the whole file.
"""

from __future__ import annotations

import gc
import io
import json
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ptxasw import ir
from ptxasw.cli.trace import trace_command
from ptxasw.driver import pipeline
from ptxasw.driver.deadline import Deadline, KernelAnalysisPass
from ptxasw.emulator.symbolic import batch
from ptxasw.ir.printer import iter_module, print_module, write_module
from ptxasw.parser import parse_ptx

HEADER = ".version 8.0\n.target sm_80\n.address_size 64\n\n"

KERNEL = """
.visible .entry {name}(.param .u64 in, .param .u64 out)
{{
    .reg .b32 %r<3>;
    .reg .b64 %rd<6>;
    .reg .f32 %f<3>;
    ld.param.u64 %rd1, [in];
    ld.param.u64 %rd2, [out];
    mov.u32 %r1, %tid.x;
    cvta.to.global.u64 %rd3, %rd1;
    mul.wide.s32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    ld.global.f32 %f1, [%rd5+4];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd5], %f2;
    ret;
}}
"""


def many_kernels(count: int) -> str:
    return HEADER + "".join(KERNEL.format(name=f"k{i}") for i in range(count))


# --------------------------------------------------------------------------
# Parser and printer


def test_parser_shares_immutable_operands_between_instructions() -> None:
    module = parse_ptx(many_kernels(2))
    first, second = (list(fn.instructions()) for fn in module.kernels)
    # `ld.global.f32 %f1, [%rd5+4]` in both kernels: one Register, one Address object.
    assert first[6].operands[0] is second[6].operands[0]
    assert first[6].operands[1] is second[6].operands[1]
    assert first[6] is not second[6] and first[6] == second[6]


def test_operand_sharing_follows_declarations_made_later() -> None:
    # `%x` is a register in f, then a .param of g (GCC names params so): the
    # shared operand for the text `%x` must not outlive the declaration.
    text = HEADER + (
        ".visible .func f()\n{\n.reg .b32 %x;\nmov.u32 %x, 1;\nret;\n}\n"
        ".visible .func g(.param .u32 %x)\n{\n.reg .b32 %r1;\nld.param.u32 %r1, [%x];\n"
        "mov.u32 %r1, %x;\nret;\n}\n"
    )
    f, g = parse_ptx(text).functions
    assert next(f.instructions()).operands[0] == ir.Register("%x")
    assert list(g.instructions())[1].operands[1] == ir.Symbol("%x")


def test_printer_streams_one_piece_per_top_level_item() -> None:
    module = parse_ptx(many_kernels(3))
    pieces = list(iter_module(module))
    assert len(pieces) == len(module.items)
    assert "".join(pieces) == print_module(module)
    out = io.StringIO()
    write_module(module, out)
    assert out.getvalue() == print_module(module)
    assert parse_ptx(out.getvalue()) == module


# --------------------------------------------------------------------------
# trace: streaming


def _record_analyses(
    monkeypatch: pytest.MonkeyPatch, on_start: Callable[[str], None], refs: list[Any] | None = None
) -> None:
    """Wrap batch's per-kernel analysis: ``on_start(name)`` first, a weak reference to the result kept."""
    refs = [] if refs is None else refs
    real = batch._analyse

    def analyse(module: ir.Module, shared: Any, fn: ir.Function, budget: Any) -> Any:
        on_start(fn.name)
        result = real(module, shared, fn, budget)
        refs.append(weakref.ref(result))
        return result

    monkeypatch.setattr(batch, "_analyse", analyse)


def test_trace_prints_each_kernel_before_analysing_the_next_and_forgets_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ptx = tmp_path / "many.ptx"
    ptx.write_text(many_kernels(4))
    printed: dict[str, str] = {}
    alive: dict[str, int] = {}
    refs: list[Any] = []

    def on_start(name: str) -> None:
        printed[name] = capsys.readouterr().out
        gc.collect()
        alive[name] = sum(1 for r in refs if r() is not None)

    _record_analyses(monkeypatch, on_start, refs)
    with pytest.raises(SystemExit) as stop:
        trace_command.main([str(ptx)], standalone_mode=True)
    assert stop.value.code == 0
    rest = capsys.readouterr().out
    # Each kernel's trace was out before the next one's analysis began ...
    assert printed["k0"] == ""
    assert printed["k1"].startswith("kernel k0: complete") and "k1" not in printed["k1"]
    assert "kernel k2" in printed["k3"] and "kernel k3" in rest
    # ... and no earlier analysis was alive when a later one started.
    assert alive == {"k0": 0, "k1": 0, "k2": 0, "k3": 0}


def test_trace_json_is_written_incrementally_and_stays_one_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ptx = tmp_path / "many.ptx"
    ptx.write_text(many_kernels(3))
    seen: dict[str, str] = {}
    _record_analyses(monkeypatch, lambda name: seen.setdefault(name, capsys.readouterr().out))
    with pytest.raises(SystemExit):
        trace_command.main([str(ptx), "--json"])
    out = "".join(seen.values()) + capsys.readouterr().out
    assert seen["k0"].startswith('{\n  "file": ')  # the head is out before any analysis
    assert '"kernel": "k0"' in seen["k1"]
    doc = json.loads(out)
    assert [k["kernel"] for k in doc["kernels"]] == ["k0", "k1", "k2"]
    assert doc["status"] == "complete" and doc["skipped"] == 0
    assert all(k["loads"] == 1 and k["stores"] == 1 for k in doc["kernels"])


# --------------------------------------------------------------------------
# trace: the overall budget


class FakeClock:
    """batch.now, advanced by one second per kernel analysed."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(batch, "now", fake)
    real = batch._analyse

    def analyse(*args: Any) -> Any:
        fake.t += 1.0
        return real(*args)

    monkeypatch.setattr(batch, "_analyse", analyse)
    return fake


def test_trace_budget_lists_the_kernels_it_did_not_reach(tmp_path: Path, clock: FakeClock) -> None:
    ptx = tmp_path / "many.ptx"
    ptx.write_text(many_kernels(5))
    out = CliRunner().invoke(trace_command, [str(ptx), "--json", "--budget", "1.5"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert [k["status"] for k in doc["kernels"]] == ["complete", "complete", "skipped", "skipped", "skipped"]
    assert doc["status"] == "partial" and doc["skipped"] == 3
    assert "budget" in doc["kernels"][2]["reason"]
    assert "3 of 5 kernels skipped" in out.stderr

    text = CliRunner().invoke(trace_command, [str(ptx), "--budget", "1.5"])
    lines = [line for line in text.stdout.splitlines() if line.startswith("kernel ")]
    assert lines[2] == "kernel k2: skipped (overall time budget spent before this kernel)"
    assert len(lines) == 5

    jl = CliRunner().invoke(trace_command, [str(ptx), "--json-lines", "--budget", "1.5"])
    rows = [json.loads(line) for line in jl.stdout.splitlines()]
    assert [r["kernel"] for r in rows] == ["k0", "k1", "k2", "k3", "k4"]
    assert rows[4]["status"] == "skipped"


def test_each_analysis_sees_the_shared_items_not_every_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    # An analysis must not cost time in the number of kernels of the file:
    # 30,000 scans of 30,000 items made a 50 MB file take hours.
    seen: list[list[str]] = []
    real = batch.SymbolicExecutor

    def spy(module: ir.Module, fn: ir.Function, budget: Any) -> Any:
        seen.append([type(item).__name__ for item in module.items])
        return real(module, fn, budget)

    monkeypatch.setattr(batch, "SymbolicExecutor", spy)
    helper = ".visible .func (.param .b32 r) helper(.param .b32 a)\n{\n.reg .b32 %r1;\nret;\n}\n"
    for count in (2, 6):
        text = many_kernels(count).replace(HEADER, HEADER + "// .globl everything\n" + helper)
        assert all(r.status == "complete" for r in batch.iter_analyses(parse_ptx(text)))
    assert len(seen) == 8
    assert all(items == ["Version", "Target", "AddressSize", "Function", "Function"] for items in seen)


def test_a_kernel_started_near_the_deadline_gets_only_the_time_left(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = parse_ptx(many_kernels(2))
    budgets: list[float] = []
    real = batch._analyse

    def spy(module: ir.Module, shared: Any, fn: ir.Function, budget: Any) -> Any:
        budgets.append(budget.time_s)
        return real(module, shared, fn, budget)

    monkeypatch.setattr(batch, "_analyse", spy)
    results = list(batch.iter_analyses(module, deadline=clock.t + 1.5))
    assert [r.status for r in results] == ["complete", "complete"]
    assert budgets[0] == 1.5 and budgets[1] == pytest.approx(0.5)


def test_iter_analyses_reports_a_failing_kernel_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    module = parse_ptx(many_kernels(3))
    real = batch._analyse

    def flaky(module: ir.Module, shared: Any, fn: ir.Function, budget: Any) -> Any:
        if fn.name == "k1":
            raise RuntimeError("emulator bug")
        return real(module, shared, fn, budget)

    monkeypatch.setattr(batch, "_analyse", flaky)
    results = list(batch.iter_analyses(module, catch=True))
    assert [r.status for r in results] == ["complete", "error", "complete"]
    assert results[1].reason == "RuntimeError: emulator bug"
    with pytest.raises(RuntimeError):
        list(batch.iter_analyses(module))
    with pytest.raises(KeyError):
        next(batch.iter_analyses(module, ["k0", "nope"]))


def test_trace_internal_error_keeps_the_json_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ptx = tmp_path / "many.ptx"
    ptx.write_text(many_kernels(2))
    real = batch._analyse

    def flaky(module: ir.Module, shared: Any, fn: ir.Function, budget: Any) -> Any:
        if fn.name == "k0":
            raise RuntimeError("emulator bug")
        return real(module, shared, fn, budget)

    monkeypatch.setattr(batch, "_analyse", flaky)
    monkeypatch.delenv("PTXASW_DEBUG", raising=False)
    out = CliRunner().invoke(trace_command, [str(ptx), "--json"])
    assert out.exit_code == 1
    assert out.stderr == "ptxasw: error: internal error while analysing k0: RuntimeError: emulator bug\n"
    doc = json.loads(out.stdout)
    assert [k["status"] for k in doc["kernels"]] == ["error", "complete"]


# --------------------------------------------------------------------------
# The drop-in's pipeline under a deadline


def test_pipeline_passes_skip_kernels_past_the_deadline_not_the_file(clock: FakeClock) -> None:
    text = many_kernels(4)
    # The pipeline's deadline is monotonic time; the analysis pass translates
    # it to batch's (fake) clock, on which each kernel takes one second.
    result = pipeline.run_pipeline(
        text, "many.ptx", passes=[KernelAnalysisPass()], deadline=time.monotonic() + 2.9
    )
    record = next(p for p in result.passes if p["name"] == "kernel-analysis")
    assert record["complete"] == 3 and record["skipped"] == 1
    assert record["skipped_names"] == ["k3"]
    assert result.text == print_module(parse_ptx(text))


def test_pipeline_without_deadline_analyses_everything() -> None:
    result = pipeline.run_pipeline(many_kernels(2), "two.ptx", passes=[KernelAnalysisPass()])
    record = next(p for p in result.passes if p["name"] == "kernel-analysis")
    assert record["complete"] == 2 and "skipped" not in record


def test_pipeline_skips_a_pass_that_takes_no_deadline_once_it_has_passed() -> None:
    ran: list[str] = []

    class Plain:
        name = "plain"

        def run(self, module: ir.Module, analyses: Any) -> pipeline.PassResult:
            ran.append("plain")
            return pipeline.PassResult(False)

    result = pipeline.run_pipeline(many_kernels(1), "one.ptx", passes=[Plain()], deadline=0.0)
    assert ran == []
    record = next(p for p in result.passes if p["name"] == "plain")
    assert record["skipped"] == 1
    ok = pipeline.run_pipeline(many_kernels(1), "one.ptx", passes=[Plain()])
    assert ran == ["plain"] and ok.text


def test_deadline_kernels_helper_records_what_it_leaves_out() -> None:
    module = parse_ptx(many_kernels(3))
    assert [fn.name for fn in Deadline().kernels(module, "p")] == ["k0", "k1", "k2"]
    past = Deadline(0.0)
    assert list(past.kernels(module, "p")) == []
    assert past.record("p") == {"skipped": 3, "skipped_names": ["k0", "k1", "k2"]}
    assert Deadline.after(float("inf")).at is None


def test_drop_in_hands_its_deadline_to_the_pipeline() -> None:
    from ptxasw.driver import ptxas

    seen: list[float | None] = []

    def with_deadline(text: str, name: str, deadline: float | None = None) -> Any:
        seen.append(deadline)
        return pipeline.PipelineResult(text)

    def without(text: str, name: str) -> Any:
        return pipeline.PipelineResult(text)

    before = time.monotonic()
    assert ptxas._pipeline_box(with_deadline, HEADER, "x", ptxas._pipeline_deadline(10.0))[0] == "ok"
    assert seen[0] is not None and before + 8.0 <= seen[0] <= time.monotonic() + 9.0
    assert ptxas._pipeline_box(without, HEADER, "x", 1.0)[0] == "ok"
    assert ptxas._pipeline_deadline(float("inf")) is None


def test_drop_in_skips_kernels_past_its_timeout_instead_of_falling_back(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ptxasw.driver import ptxas

    # Each kernel takes one (fake) second; the time-out is 30 s. The pipeline
    # runs in a forked child, which inherits the fake clock.
    monkeypatch.setenv("PTXASW_PIPELINE", "ptxasw.driver.deadline:analysis_pipeline")
    outcome = ptxas.transform_ptx(many_kernels(40), "many.ptx", timeout=30.0)
    assert outcome.status == "ok" and not outcome.timed_out
    record = next(p for p in outcome.passes if p["name"] == "kernel-analysis")
    assert record["complete"] + record["skipped"] == 40
    assert 20 <= record["complete"] <= 28 and record["skipped_names"][-1] == "k39"
