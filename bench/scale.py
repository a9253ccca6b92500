#!/usr/bin/env python3
"""Memory at scale (issue 29): RSS per connection of `tlskit serve` and the bare rustls
server with N connections held idle after the handshake, or held in the middle of it.

    python3 bench/scale.py --tls-load target/release/tls-load \\
        --server tlskit=target/release/tlskit --server bare=target/release/bare-rustls \\
        [--count 10000] [--rounds 3] [--out bench/out/scale]

Not part of bench/run.sh nor of CI. Loopback only, bounded: at most --count connections
(≤ 19,000, under this script's raised RLIMIT_NOFILE), opened within --limit-s seconds
(tls-load's own bound), each server killed at the end of its measurement.

For every round, state (`idle`: handshake complete, then silent; `mid`: ClientHello sent
and the server's first flight received, the client's Finished never sent) and server (in
a rotating order), a fresh server is started (tlskit: `--max-connections 20000` and
every deadline at 600 s so that nothing is closed while held; bare rustls has none),
given 200 handshakes to warm up (runtime threads, ticketer, buffers), and measured:
VmRSS and /proc/PID/smaps_rollup (Rss, Anonymous) before, with the N connections held
(after 1 s), and 2 s after they are closed. Per connection = (held - before) / N.
Kernel socket buffers are not in RSS, for either server. Writes OUT/scale.json and
prints a table. Python standard library only.
"""

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def mem(pid):
    """VmRSS, Rss and Anonymous (smaps_rollup) in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:", "Threads:")):
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0])
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("Rss", "Anonymous", "Private_Dirty"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def server_argv(path, pki):
    p = lambda n: os.path.join(pki, n)
    if os.path.basename(path).startswith("tlskit"):
        return [path, "serve", "--listen", "127.0.0.1:0", "--cert", p("chain.pem"), "--key",
                p("leaf.key"), "--respond", "http", "--max-connections", "20000",
                "--handshake-timeout", "600", "--header-timeout", "600", "--idle-timeout",
                "600"]
    return [path, p("chain.pem"), p("leaf.key")]


def start(argv):
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    port, future = None, None
    while True:
        line = proc.stderr.readline().decode(errors="replace")
        if not line:
            proc.kill()
            raise RuntimeError(f"{argv[0]} did not start")
        if line.startswith("connection future "):
            future = int(line.split()[2])
        if line.startswith("listening on "):
            port = int(line.rsplit(":", 1)[1])
            break
    import threading
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port, future


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def one(a, name, path, pki, state):
    proc, port, future = start(server_argv(path, pki))
    addr = f"127.0.0.1:{port}"
    try:
        w = subprocess.run([a.tls_load, "run", addr, "--count", "200", "--warmup", "10",
                            "--conc", "2", "--path", "/"], input="go\n", capture_output=True,
                           text=True, timeout=120)
        if w.returncode != 0:
            raise RuntimeError(f"warm-up: {w.stderr.strip()[:300]}")
        time.sleep(1.0)
        before = mem(proc.pid)
        argv = [a.tls_load, "hold", addr, "--count", str(a.count), "--limit-s",
                str(a.limit_s)] + (["--partial"] if state == "mid" else [])
        g = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        line = g.stdout.readline().strip()
        opened_s = time.monotonic() - t0
        if not line.startswith("ready"):
            g.kill()
            err = g.stderr.read().strip()
            g.wait()
            raise RuntimeError(f"hold: {(err or line)[:300]}")
        time.sleep(1.0)
        held = mem(proc.pid)
        g.stdin.close()
        g.wait(60)
        time.sleep(2.0)
        after = mem(proc.pid)
        alive = proc.poll() is None
    finally:
        stop(proc)
    n = a.count
    return {"server": name, "state": state, "connections": n, "future_bytes": future,
            "before": before, "held": held, "after": after, "open_s": round(opened_s, 2),
            "alive": alive,
            "per_conn_kib": {k: (held[k] - before[k]) / n for k in held
                             if k in before and k not in ("Threads",)}}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tls-load", dest="tls_load", required=True)
    p.add_argument("--server", action="append", required=True, help="NAME=PATH")
    p.add_argument("--count", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--state", action="append", choices=["idle", "mid"])
    p.add_argument("--limit-s", dest="limit_s", type=int, default=120)
    p.add_argument("--out", default=os.path.join(HERE, "out", "scale"))
    a = p.parse_args()
    if not 1 <= a.count <= 19000:
        sys.exit("--count must be 1 to 19,000")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = a.count + 1000
    if hard != resource.RLIM_INFINITY and hard < want:
        sys.exit(f"RLIMIT_NOFILE hard limit {hard} is under {want}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    os.makedirs(a.out, exist_ok=True)
    servers = [tuple(s.split("=", 1)) for s in a.server]
    states = a.state or ["idle", "mid"]
    pki = tempfile.mkdtemp(prefix="tlskit-scale-")
    subprocess.run([a.tls_load, "pki", pki], check=True)
    runs = []
    k = 0
    for rnd in range(a.rounds):
        for state in states:
            order = servers[k % len(servers):] + servers[:k % len(servers)]
            k += 1
            for name, path in order:
                r = one(a, name, path, pki, state)
                r["round"] = rnd
                runs.append(r)
                log(f"round {rnd + 1} {state:4} {name:10} VmRSS {r['before']['VmRSS']} -> "
                    f"{r['held']['VmRSS']} -> {r['after']['VmRSS']} KiB: "
                    f"{r['per_conn_kib']['VmRSS']:.2f} KiB/conn (Anonymous "
                    f"{r['per_conn_kib'].get('Anonymous', 0):.2f}), opened in {r['open_s']} s")
    summary = {}
    for state in states:
        for name, _ in servers:
            rs = [r for r in runs if r["state"] == state and r["server"] == name]
            summary.setdefault(state, {})[name] = {
                "per_conn_kib_median": statistics.median(r["per_conn_kib"]["VmRSS"] for r in rs),
                "per_conn_kib_all": [round(r["per_conn_kib"]["VmRSS"], 2) for r in rs],
                "anon_per_conn_kib_median": statistics.median(
                    r["per_conn_kib"].get("Anonymous", 0) for r in rs),
                "future_bytes": rs[0]["future_bytes"]}
    with open(os.path.join(a.out, "scale.json"), "w") as f:
        json.dump({"meta": {"count": a.count, "rounds": a.rounds,
                            "servers": dict(servers)}, "runs": runs, "summary": summary},
                  f, indent=1)
    print(f"| state | server | RSS per connection, KiB (median of {a.rounds}; all) | "
          "anonymous per connection, KiB |")
    print("|---|---|---|---|")
    for state, per in summary.items():
        for name, x in per.items():
            print(f"| {state} | {name} | {x['per_conn_kib_median']:.2f} "
                  f"({', '.join(f'{v:.2f}' for v in x['per_conn_kib_all'])}) | "
                  f"{x['anon_per_conn_kib_median']:.2f} |")


if __name__ == "__main__":
    main()
