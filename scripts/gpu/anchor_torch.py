"""anchor_torch.py: the GPU check's second yardstick, where PyTorch is
installed: the figures of anchor.c, timed through PyTorch on device 0.

Usage: python3 anchor_torch.py [N [MIB [TIME]]] (defaults 4096, 64, 1.0).
Prints one "torch KEY VALUE" line per figure (the keys of anchor.c); exits
2 when PyTorch or a CUDA device is missing.
"""

import sys
import time

try:
    import torch
except ImportError:
    sys.exit(2)
if not torch.cuda.is_available():
    sys.exit(2)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
nbytes = (int(sys.argv[2]) if len(sys.argv) > 2 else 64) << 20
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
dev = torch.device("cuda", 0)
print("torch version", torch.__version__, flush=True)

host = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
gpu = torch.empty(nbytes, dtype=torch.uint8, device=dev)
best_in = best_out = 1e9
for _ in range(10):
    t = time.perf_counter()
    gpu.copy_(host)
    torch.cuda.synchronize(dev)
    best_in = min(best_in, time.perf_counter() - t)
    t = time.perf_counter()
    host.copy_(gpu)
    torch.cuda.synchronize(dev)
    best_out = min(best_out, time.perf_counter() - t)
print("torch htod_gbs %.2f" % (nbytes / best_in / 1e9))
print("torch dtoh_gbs %.2f" % (nbytes / best_out / 1e9))

reps = 10000
best = 1e9
for _ in range(5):
    t = time.perf_counter()
    for _ in range(reps):
        torch.cuda.synchronize(dev)
    best = min(best, (time.perf_counter() - t) / reps)
print("torch sync_us %.3f" % (best * 1e6))


def tflops(dtype, tf32=False):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.zeros((n, n), dtype=dtype, device=dev)
    c = torch.empty((n, n), dtype=dtype, device=dev)
    torch.matmul(a, a, out=c)
    torch.cuda.synchronize(dev)
    count, start = 0, time.perf_counter()
    while True:
        torch.matmul(a, a, out=c)
        torch.cuda.synchronize(dev)
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return 2.0 * n * n * n * count / elapsed / 1e12


for key, dtype, tf32 in [("sgemm", torch.float32, False), ("dgemm", torch.float64, False),
                         ("tf32", torch.float32, True), ("bf16", torch.bfloat16, False),
                         ("f16", torch.float16, False)]:
    print("torch %s %.2f" % (key, tflops(dtype, tf32)), flush=True)
