"""Rows of `bench/table.py` for eager mode: the 200-op elementwise chain on f32[16] without
grad and forward + backward (the tape), and `kn.randn(1000)`; kiln and NumPy by hand, with
PyTorch eager (when importable) measured in the same run and named in the note. The floor
column is empty: the issue's targets are PyTorch's figures."""

from bench_eager import _torch, factory_cases, interleaved, tape_cases


def _peers(label: str, cases: dict, quick: bool) -> dict:
    repeats, min_s = (1, 0.01) if quick else (7, 0.2)
    times = interleaved(cases[label], repeats, min_s)
    best = {name: min(ts) * 1e6 for name, ts in times.items()}
    note = "no PyTorch installed"
    if "PyTorch" in best:
        per = sorted(k / t for k, t in zip(times["kiln"], times["PyTorch"]))
        ratio = best["kiln"] / best["PyTorch"]
        note = (f"PyTorch eager {best['PyTorch']:.3g} µs: kiln / PyTorch {ratio:.2f}x "
                f"(repeats {per[0]:.2f}-{per[-1]:.2f})")  # fmt: skip
    return {"workload": label.split(") ", 1)[1], "unit": "µs", "kiln": best["kiln"],
            "numpy": best.get("NumPy"), "floor": None, "note": note}  # fmt: skip


def chain_no_grad(quick: bool) -> dict:
    return _peers("(d) 200-op chain, f32[16], no grad", tape_cases(_torch()), quick)


def chain_forward_backward(quick: bool) -> dict:
    return _peers("(d) 200-op chain, f32[16], forward + backward", tape_cases(_torch()), quick)


def randn_1000(quick: bool) -> dict:
    return _peers("(e) randn(1000)", factory_cases(_torch()), quick)


ROWS = [chain_no_grad, chain_forward_backward, randn_1000]
