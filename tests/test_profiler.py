"""kn.profiler: torch.profiler's interface over kiln's eager calls. Expected values by hand
(the calls each block makes), and the table's layout against PyTorch 2.13's (skipped without
torch)."""

import json

import pytest

import kiln as kn


def test_records_the_calls_with_counts_shapes_and_nesting():
    x = kn.ones(8, 8)
    with kn.profiler.profile(record_shapes=True) as prof:
        with kn.profiler.record_function("block"):
            y = (x @ x).relu()
            y = y + y
        z = kn.sum(y)
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts == {"block": 1, "kiln::__matmul__": 1, "kiln::relu": 1, "kiln::__add__": 1,
                      "kiln::sum": 1}  # fmt: skip
    assert z.item() == 8 * 8 * 16
    events = {e.name: e for e in prof.events()}
    block = events["block"]
    inner = sum(events[k].cpu_time_total for k in ("kiln::__matmul__", "kiln::relu",
                                                  "kiln::__add__"))  # fmt: skip
    assert block.cpu_time_total >= inner
    assert block.self_cpu_time_total == pytest.approx(block.cpu_time_total - inner)
    assert events["kiln::__matmul__"].input_shapes == [[8, 8], [8, 8]]
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert "Input Shapes" in by_shape.table() and "[[8, 8], [8, 8]]" in by_shape.table()


def test_nothing_is_swapped_outside_a_profile():
    add, method, call = kn.add, kn.Tensor.__add__, kn.nn.Module.__call__
    with kn.profiler.profile():
        assert kn.Tensor.__add__ is not method
        with pytest.raises(RuntimeError, match="already recording"):
            kn.profiler.profile().start()
    assert kn.add is add and kn.Tensor.__add__ is method and kn.nn.Module.__call__ is call
    with kn.profiler.record_function("idle"):  # no profile: nothing to record into
        kn.ones(1) + 1


def test_training_step_events_and_chrome_trace(tmp_path):
    kn.manual_seed(0)
    model = kn.nn.Sequential(kn.nn.Linear(4, 3), kn.nn.ReLU())
    opt = kn.optim.SGD(model.parameters(), lr=0.1)
    compiled = kn.compile(lambda a: model(a).sum())
    with kn.profiler.profile() as prof:
        for _ in range(2):
            opt.zero_grad()
            model(kn.ones(2, 4)).sum().backward()
            opt.step()
        compiled(kn.ones(2, 4))
    counts = {e.key: e.count for e in prof.key_averages()}
    assert counts["Optimizer.step#SGD.step"] == 2 and counts["kiln::backward"] == 2
    assert counts["nn.Module: Sequential"] == 3 and counts["kn.compile: <lambda>"] == 1
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    assert len(trace) == len(prof.events()) and {e["ph"] for e in trace} == {"X"}


def test_schedule_records_the_active_steps_and_hands_them_over(tmp_path):
    saved = []
    sched = kn.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    with kn.profiler.profile(schedule=sched, on_trace_ready=lambda p: saved.append(
            {e.key: e.count for e in p.key_averages()})) as prof:  # fmt: skip
        for _ in range(6):
            kn.ones(2).exp()
            prof.step()
    assert saved == [{"kiln::ones": 2, "kiln::exp": 2}]  # steps 2 and 3 only
    handler = kn.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w")
    with kn.profiler.profile(on_trace_ready=handler):
        kn.zeros(1)
    (written,) = tmp_path.iterdir()
    assert written.name.startswith("w.") and written.name.endswith(".pt.trace.json")


def test_legacy_autograd_profiler():
    with kn.autograd.profiler.profile() as prof:
        with kn.autograd.profiler.record_function("f"):
            kn.ones(2).sin()
    assert {e.key for e in prof.key_averages()} == {"f", "kiln::ones", "kiln::sin"}
    with kn.autograd.profiler.profile(enabled=False) as off:
        kn.ones(2).sin()
    assert len(off.events()) == 0


def test_table_layout_is_pytorchs():
    torch = pytest.importorskip("torch")
    with torch.profiler.profile() as tp:
        torch.ones(2).sin()
    with kn.profiler.profile() as kp:
        kn.ones(2).sin()
    theirs = tp.key_averages().table(sort_by="cpu_time_total").splitlines()
    ours = kp.key_averages().table(sort_by="cpu_time_total").splitlines()
    assert [h.strip() for h in ours[1].split("  ") if h] == [
        h.strip() for h in theirs[1].split("  ") if h]  # fmt: skip
    assert ours[-1].startswith("Self CPU time total: ")
    assert theirs[-1].startswith("Self CPU time total: ")
