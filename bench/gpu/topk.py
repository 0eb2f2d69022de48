#!/usr/bin/env python3
"""Times torch.topk on the data GpuBench.cu used (|g|, N = 2^24, k = N/100)
and appends the row to <out>/kernels.csv, beside GradComm's exact_select."""
import sys
import time

import numpy as np
import torch

out = sys.argv[1]
data = np.fromfile(f"{out}/topk_input.f32", dtype=np.float32)
x = torch.from_numpy(data).cuda().abs()
k = (x.numel() + 99) // 100
torch.topk(x, k)
torch.cuda.synchronize()
samples = []
for _ in range(11):
    torch.cuda.synchronize()
    start = time.perf_counter()
    torch.topk(x, k)
    torch.cuda.synchronize()
    samples.append((time.perf_counter() - start) * 1e3)
samples.sort()
with open(f"{out}/kernels.csv", "a") as f:
    f.write(f"{x.numel()},torch_topk,{samples[len(samples) // 2]},,\n")
print(f"torch.topk: {samples[len(samples) // 2]:.3f} ms")
