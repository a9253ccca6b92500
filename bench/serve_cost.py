#!/usr/bin/env python3
"""Instructions per handshake of `tlskit serve` against the bare rustls server (issue 29).

Each server runs under callgrind (valgrind --tool=callgrind); the generator (tls-load,
outside valgrind) makes --warmup handshakes, the counters are zeroed
(`callgrind_control -z`), it makes --count more, and the counters are dumped
(`callgrind_control -d`). Instructions per handshake = the dump's total / --count: the
server's whole user-space work over the measured handshakes (every thread, the runtime's
idle turns and timers included; the kernel's work is not counted, see --syscalls).

    python3 bench/serve_cost.py --tls-load target/release/tls-load \\
        --server tlskit=target/release/tlskit --server bare=target/release/bare-rustls \\
        [--group x25519 --group x25519mlkem768] [--mode full --mode resumed] \\
        [--count 1000] [--warmup 100] [--rounds 1] [--out bench/out/cost] [--syscalls]

A server NAME=PATH is `tlskit serve` when PATH's file name starts with `tlskit`, else the
bare rustls server (bench/src/bin/bare-rustls.rs). Servers run in a rotating order per
round. Writes OUT/cost.json and keeps each dump (OUT/NAME-GROUP-MODE-ROUND.cg) for
callgrind_annotate. --syscalls: one more pass per server without valgrind, under
`strace -f -c`, for the system calls per handshake. Python standard library only.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def log(msg):
    print(f"[cost {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def server_argv(path, pki):
    p = lambda n: os.path.join(pki, n)
    if os.path.basename(path).startswith("tlskit"):
        return [path, "serve", "--listen", "127.0.0.1:0", "--cert", p("chain.pem"), "--key",
                p("leaf.key"), "--respond", "http", "--max-connections", "20000"]
    return [path, p("chain.pem"), p("leaf.key")]


def start(argv):
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    port = None
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        line = proc.stderr.readline().decode(errors="replace")
        if not line:
            break
        if line.startswith("listening on "):
            port = int(line.rsplit(":", 1)[1])
            break
    if port is None:
        proc.kill()
        raise RuntimeError(f"{argv[0]} did not start")
    import threading
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def generator(a, port, group, mode, between):
    """Run tls-load; `between(phase)` is called at 'warm' ('zero') and after the run
    ('dump'). Returns the generator's JSON."""
    argv = [a.tls_load, "run", f"127.0.0.1:{port}", "--count", str(a.count), "--warmup",
            str(a.warmup), "--conc", str(a.conc), "--path", "/hello.txt", "--group", group]
    if mode == "resumed":
        argv.append("--resume")
    g = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = g.stdout.readline().strip()
        if line != "warm":
            raise RuntimeError(f"generator: {g.stderr.read().strip()[:300] or line}")
        between("zero")
        g.stdin.write("go\n")
        g.stdin.flush()
        out = json.loads(g.stdout.readline())
        between("dump")
        return out
    finally:
        if g.poll() is None:
            g.kill()
        g.wait()


def total_ir(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def callgrind_run(a, name, path, pki, group, mode, rnd):
    base = os.path.join(a.out, f"{name}-{group}-{mode}-{rnd}.cg")
    for f in os.listdir(a.out):
        if f.startswith(os.path.basename(base)):
            os.unlink(os.path.join(a.out, f))
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={base}", "--vgdb=yes",
            "--dump-instr=no", "--compress-strings=no"] + server_argv(path, pki)
    proc, port = start(argv)
    try:
        def between(phase):
            flag = "-z" if phase == "zero" else "-d"
            subprocess.run(["callgrind_control", flag, str(proc.pid)], check=True,
                           capture_output=True, timeout=120)
        out = generator(a, port, group, mode, between)
    finally:
        stop(proc)
    # The dump made by -d is BASE.1 (BASE itself is written at exit).
    dump = base + ".1"
    ir = total_ir(dump)
    os.replace(dump, base)
    ok = out["ok"]
    return {"ir": ir, "ok": ok, "resumed": out["resumed"], "failed": out["failed"],
            "ir_per_hs": ir / ok if ok else None, "dump": base}


def strace_run(a, name, path, pki, group, mode):
    proc, port = start(server_argv(path, pki))
    st = {}
    try:
        summary = os.path.join(a.out, f"{name}-{group}-{mode}.strace")

        def between(phase):
            if phase == "zero":
                st["p"] = subprocess.Popen(["strace", "-f", "-c", "-o", summary, "-p",
                                            str(proc.pid)], stderr=subprocess.DEVNULL)
                time.sleep(1.0)
            else:
                st["p"].send_signal(signal.SIGINT)
                st["p"].wait(30)
        out = generator(a, port, group, mode, between)
    finally:
        stop(proc)
    calls = {}
    with open(summary) as f:
        for line in f:
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
            if m and m.group(2) != "total":
                calls[m.group(2)] = int(m.group(1))
    ok = out["ok"]
    return {"ok": ok, "per_hs": {k: v / ok for k, v in sorted(calls.items())},
            "total_per_hs": sum(calls.values()) / ok if ok else None}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tls-load", dest="tls_load", required=True)
    p.add_argument("--server", action="append", required=True, help="NAME=PATH")
    p.add_argument("--group", action="append", choices=["x25519", "x25519mlkem768"])
    p.add_argument("--mode", action="append", choices=["full", "resumed"])
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--conc", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--syscalls", action="store_true")
    p.add_argument("--out", default=os.path.join(HERE, "out", "cost"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    servers = [tuple(s.split("=", 1)) for s in a.server]
    groups = a.group or ["x25519", "x25519mlkem768"]
    modes = a.mode or ["full", "resumed"]
    pki = tempfile.mkdtemp(prefix="tlskit-cost-")
    subprocess.run([a.tls_load, "pki", pki], check=True)
    res = {"meta": {"count": a.count, "warmup": a.warmup, "conc": a.conc,
                    "rounds": a.rounds, "servers": dict(servers)}, "runs": [], "syscalls": []}
    k = 0
    for rnd in range(a.rounds):
        for group in groups:
            for mode in modes:
                order = servers[k % len(servers):] + servers[:k % len(servers)]
                k += 1
                for name, path in order:
                    r = callgrind_run(a, name, path, pki, group, mode, rnd)
                    r.update(server=name, group=group, mode=mode, round=rnd)
                    res["runs"].append(r)
                    log(f"{group} {mode:7} {name:12} {r['ir_per_hs']:,.0f} Ir/handshake "
                        f"(ok {r['ok']}, resumed {r['resumed']})")
    if a.syscalls:
        for group in groups:
            for mode in modes:
                for name, path in servers:
                    r = strace_run(a, name, path, pki, group, mode)
                    r.update(server=name, group=group, mode=mode)
                    res["syscalls"].append(r)
                    log(f"{group} {mode:7} {name:12} {r['total_per_hs']:.2f} syscalls/hs "
                        f"{r['per_hs']}")
    with open(os.path.join(a.out, "cost.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
