"""Dask distributed measured as riot-bench measures riot.

riot-bench runs this with a Python that has dask.distributed, and reads one
JSON object from its standard output. It starts a LocalCluster of
--workers worker processes with --threads each on loopback (the scheduler
runs in this process, as riotd runs beside riot-bench's master), then:

  throughput: --n tasks inc(i) with distinct arguments, submitted with
              client.map and all gathered, after --warmup tasks;
  latency:    --latency-n tasks submitted one at a time, each waited for
              (client.submit(...).result()), after a tenth as many not
              measured; riot-bench takes the percentiles as it does riot's.

Every task has a distinct argument and pure=False, so that none is answered
from Dask's memory of an earlier one.
"""

import argparse
import json
import logging
import sys
import time


def inc(i):
    return i + 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--latency-n", type=int, default=1000)
    a = p.parse_args()

    import distributed
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    with LocalCluster(n_workers=a.workers, threads_per_worker=a.threads, processes=True,
                      dashboard_address=None, host="127.0.0.1") as cluster, Client(cluster) as client:
        client.wait_for_workers(a.workers)
        base = 0

        def run_map(n):
            nonlocal base
            fs = client.map(inc, range(base, base + n), pure=False)
            base += n
            out = client.gather(fs)
            if out != list(range(base - n + 1, base + 1)):
                raise SystemExit("dask returned wrong results for %d tasks" % n)

        run_map(a.warmup)
        t0 = time.perf_counter()
        run_map(a.n)
        elapsed = time.perf_counter() - t0

        lat = []
        warm = a.latency_n // 10
        for i in range(warm + a.latency_n):
            t = time.perf_counter()
            got = client.submit(inc, base, pure=False).result()
            if got != base + 1:
                raise SystemExit("dask returned %r for inc(%d)" % (got, base))
            if i >= warm:
                lat.append(time.perf_counter() - t)
            base += 1

    json.dump({
        "peer": "Dask distributed",
        "version": distributed.__version__,
        "python": sys.version.split()[0],
        "setup": "LocalCluster, %d worker processes x %d threads, scheduler in the client's process" % (a.workers, a.threads),
        "n": a.n,
        "seconds": elapsed,
        "latencies": lat,
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
