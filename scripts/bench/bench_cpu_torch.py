#!/usr/bin/python3
"""bench_cpu_torch.py — PyTorch 1.13 doing the work of scripts/bench/bench_cpu.lua on the same threads.

    /usr/bin/python3 scripts/bench/bench_cpu_torch.py THREADS REPS STEPS

"highest" is float32; "medium" is what PyTorch offers on CPU for it: bf16 matrix products
with float32 accumulation through torch.autocast("cpu", torch.bfloat16) (torch 1.13's
set_float32_matmul_precision does not change CPU matmul). The attention and training-step
work is that of the existing twins, bench_attention_torch.py and bench_model_torch.py, run
here under each precision. Prints one "torch <what> <precision> <seconds>" line per figure."""
import contextlib
import io
import re
import runpy
import sys
import time

import torch

threads, reps, steps = (int(x) for x in sys.argv[1:4])
torch.set_num_threads(threads)
HERE = sys.argv[0].rsplit("/", 1)[0] or "."


def precision(name):
    if name == "medium":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def run_twin(script, args, name):
    """Runs a twin script in this process under a precision; returns its printed output."""
    out = io.StringIO()
    sys.argv = [script] + [str(a) for a in args]
    with contextlib.redirect_stdout(out), precision(name):
        runpy.run_path(f"{HERE}/{script}", run_name="__main__")
    return out.getvalue()


n = 2048
torch.manual_seed(0)
a, b = torch.randn(n, n), torch.randn(n, n)
for name in ("highest", "medium"):
    times = []
    with precision(name):
        a @ b
        for _ in range(reps):
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
    print(f"torch matmul {name} {median(times):.5f}", flush=True)

for name in ("highest", "medium"):
    text = run_twin("bench_attention_torch.py", [8, 8, 1024, 64, threads, reps], name)
    both = re.search(r"backward ([\d.]+)", text).group(1)
    print(f"torch attention {name} {both}", flush=True)

for fill in ("1", "0.15"):
    for name in ("highest", "medium"):
        text = run_twin("bench_model_torch.py", [fill, steps, threads], name)
        step = re.search(r"torch step ([\d.]+)", text).group(1)
        print(f"torch step{fill} {name} {step}", flush=True)
