#!/usr/bin/env python3
"""First load in a fresh process: what a one-shot command pays (issue 29).

Runs `load_floor` with JOB=NAME RUNS=1 in N fresh processes per job, the jobs in a
rotating order, and prints the median and quartiles of the in-process time of that first
call (the "first" figure load_floor prints), then rustls / tlskit when both ran.

    cargo build --release -p tlskit-bench --example load_floor
    python3 bench/first_load.py cas10k.pem --runs 31 --jobs tlskit rustls floor2io
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

FIRST = re.compile(r"first +([\d.]+) ms")


def first_ms(binary, pem, job, timeout):
    env = dict(os.environ, JOB=job, RUNS="1")
    out = subprocess.run(
        [binary, pem], env=env, capture_output=True, text=True, timeout=timeout, check=True
    ).stdout
    m = FIRST.search(out)
    if not m:
        sys.exit(f"first_load: {binary} printed no 'first ... ms' line for JOB={job}")
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pem", help="the PEM bundle (gen_store_data 10000 cas10k.pem)")
    p.add_argument("--runs", type=int, default=31, help="fresh processes per job")
    p.add_argument("--jobs", nargs="+", default=["tlskit", "rustls"])
    p.add_argument("--bin", default="target/release/examples/load_floor")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per process")
    a = p.parse_args()
    if a.runs < 1:
        sys.exit("first_load: --runs must be at least 1")
    times = {j: [] for j in a.jobs}
    for i in range(a.runs):
        for k in range(len(a.jobs)):
            job = a.jobs[(i + k) % len(a.jobs)]
            times[job].append(first_ms(a.bin, a.pem, job, a.timeout))
    med = {}
    for job in a.jobs:
        v = sorted(times[job])
        med[job] = statistics.median(v)
        print(
            f"{job:9} first load {med[job]:9.2f} ms  "
            f"(quartiles {v[len(v) // 4]:.2f}-{v[3 * len(v) // 4]:.2f}, {len(v)} processes)"
        )
    if "tlskit" in med and "rustls" in med and med["tlskit"] > 0:
        print(f"rustls / tlskit {med['rustls'] / med['tlskit']:.2f}")


if __name__ == "__main__":
    main()
