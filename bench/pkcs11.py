#!/usr/bin/env python3
"""PKCS#11 token keys in `tlskit serve` (issue 18): server CPU per full handshake with the
key on a SoftHSM2 token against the same key in a file, and handshakes per second with 4
concurrent clients for a session pool of 1 and of 4.

    python3 bench/pkcs11.py --tlskit target/release/tlskit --tls-load target/release/tls-load \
        [--count 500] [--rounds 3] [--conc 4] [--server-unpinned]

The same P-256 key and chain (bench's `tls-load pki`) serve both ways: the key file is
imported into a fresh SoftHSM2 token (softhsm2-util --import). Server on CPU 0, generator
(tls-load, TLS 1.3, X25519, no resumption) on CPU 1, as in serve.py; server CPU is
utime+stime from /proc around the measured handshakes. Rounds interleave the
configurations; medians are printed as one JSON object and a Markdown table.
Python standard library only.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

CLK = os.sysconf("SC_CLK_TCK")
PIN = "24681357"


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / CLK


def pin(c):
    return ["taskset", "-c", str(c)] if shutil.which("taskset") and (os.cpu_count() or 1) >= 2 else []


def start(argv, env):
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=env)
    for line in p.stderr:
        if line.startswith("listening on "):
            return p, line.split()[-1]
    p.kill()
    raise RuntimeError("server did not start")


def measure(a, addr, pid, count):
    g = subprocess.Popen(pin(1) + [a.tls_load, "run", addr, "--count", str(count), "--warmup",
                                   "50", "--conc", str(a.conc), "--path", "/"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    if g.stdout.readline().strip() != "warm":
        g.kill()
        raise RuntimeError(g.stderr.read())
    c0 = cpu(pid)
    g.stdin.write("go\n")
    g.stdin.flush()
    rec = json.loads(g.stdout.readline())
    c1 = cpu(pid)
    g.wait()
    ok = rec["ok"]
    if not ok or rec["failed"]:
        raise RuntimeError(f"handshakes failed: {rec}")
    return {"cpu_us_per_hs": (c1 - c0) / ok * 1e6, "rate_per_s": ok / rec["wall_s"]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tlskit", required=True)
    p.add_argument("--tls-load", dest="tls_load", required=True)
    p.add_argument("--count", type=int, default=500)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--conc", type=int, default=4)
    p.add_argument("--module", default="/usr/lib/softhsm/libsofthsm2.so")
    p.add_argument("--server-unpinned", action="store_true",
                   help="let the server use every core (pool scaling), generator still on CPU 1")
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="tlskit-pkcs11-bench-")
    pki = os.path.join(tmp, "pki")
    subprocess.run([a.tls_load, "pki", pki], check=True)
    tokens = os.path.join(tmp, "tokens")
    os.makedirs(tokens)
    conf = os.path.join(tmp, "softhsm2.conf")
    with open(conf, "w") as f:
        f.write(f"directories.tokendir = {tokens}\nobjectstore.backend = file\nlog.level = ERROR\n")
    env = dict(os.environ, SOFTHSM2_CONF=conf, TLSKIT_PKCS11_PIN=PIN)
    subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", "bench", "--pin", PIN,
                    "--so-pin", PIN], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["softhsm2-util", "--import", os.path.join(pki, "leaf.key"), "--token", "bench",
                    "--label", "tls", "--id", "01", "--pin", PIN], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    uri = f"pkcs11:token=bench;object=tls?module-path={a.module}"
    configs = {
        "file": (os.path.join(pki, "leaf.key"), "4"),
        "token, 1 session": (uri, "1"),
        "token, 4 sessions": (uri, "4"),
    }
    servers = {}
    for name, (key, sessions) in configs.items():
        e = dict(env, TLSKIT_PKCS11_SESSIONS=sessions)
        servers[name] = start(([] if a.server_unpinned else pin(0)) + [a.tlskit, "serve", "--listen", "127.0.0.1:0", "--cert",
                                        os.path.join(pki, "chain.pem"), "--key", key,
                                        "--respond", "http", "--no-watch"], e)
    res = {n: [] for n in configs}
    try:
        for r in range(a.rounds):
            order = list(configs)[r % 3:] + list(configs)[:r % 3]
            for n in order:
                proc, addr = servers[n]
                res[n].append(measure(a, addr, proc.pid, a.count))
                print(f"round {r + 1} {n}: {res[n][-1]}", file=sys.stderr)
    finally:
        for proc, _ in servers.values():
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    out = {}
    for n, rs in res.items():
        out[n] = {
            "cpu_us_per_hs": round(statistics.median(r["cpu_us_per_hs"] for r in rs), 1),
            "rate_per_s": round(statistics.median(r["rate_per_s"] for r in rs), 1),
        }
    base = out["file"]["cpu_us_per_hs"]
    for n in out:
        out[n]["cpu_ratio_to_file"] = round(out[n]["cpu_us_per_hs"] / base, 2)
    print(json.dumps(out, indent=2))
    print(f"\n| key | server CPU µs/handshake | ratio to file | handshakes/s ({a.conc} clients) |")
    print("|---|---|---|---|")
    for n, v in out.items():
        print(f"| {n} | {v['cpu_us_per_hs']} | {v['cpu_ratio_to_file']} | {v['rate_per_s']} |")


if __name__ == "__main__":
    main()
