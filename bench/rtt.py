#!/usr/bin/env python3
"""Round trips of a full handshake with a long chain on a 50 ms link (issue 5).

Called by harness.py (bench/run.sh); can also run on its own (as root):

    python3 bench/rtt.py --tlskit target/release/tlskit [--out bench/out] [--reps 5]

writes bench/out/rtt.json and bench/out/rtt.md. Python standard library only.

Two network namespaces joined by tests/tools/netdelay (25 ms each way; this kernel has no
netem, so the delay is made in user space and TCP runs end to end). In the server
namespace, with the same key and the same ~23.5 KB certificate (a P-256 leaf with 800 DNS
names, signed by a small CA made with tlskit): `tlskit serve` (certificate compression
on, the default), `tlskit serve --compress none`, and nginx (Debian's, OpenSSL 3.0: no
certificate compression). From the client namespace, each server is measured by two
clients:

- `tlskit probe --json --repeat N`: handshake round trips and milliseconds after TCP's
  own (median of N), and the server's first flight (bytes, TCP segments). The probe
  offers brotli and zlib certificate compression.
- curl (Debian's, OpenSSL 3.0, which offers no certificate compression):
  `time_appconnect - time_connect`, the TLS handshake alone, median of N, in round trips.

Needs root, /dev/net/tun, iproute2; nginx and curl are optional (their rows read n/a).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NETDELAY = os.path.join(HERE, "..", "tests", "tools", "netdelay")
DELAY_MS = 25
NS_A, NS_B = "tlskit-rtt-a", "tlskit-rtt-b"
ADDR_A = "10.77.0.1"
NAMES = 800


def log(msg):
    print(f"[rtt {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def can_run():
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun"
    if not shutil.which("ip"):
        return "iproute2 missing"
    return None


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def make_pki(tlskit, d):
    run([tlskit, "ca", "init", os.path.join(d, "ca"), "--subject", "CN=tlskit rtt bench root"])
    run([tlskit, "key", "new", "-o", os.path.join(d, "web.key")])
    sans = []
    for i in range(NAMES):
        sans += ["--san", f"dns:host-{i:04}.rtt.tlskit.example"]
    run([tlskit, "csr", "new", "--key", os.path.join(d, "web.key"), "--subject",
         "CN=www.rtt.tlskit.example", "--san", "dns:www.rtt.tlskit.example", *sans,
         "-o", os.path.join(d, "web.csr")])
    run([tlskit, "ca", "issue", os.path.join(d, "ca"), "--csr", os.path.join(d, "web.csr"),
         "--profile", "server", "-o", os.path.join(d, "web.pem")])


def nginx_conf(d, port):
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""user root; worker_processes 1; daemon off; pid {d}/nginx.pid;
error_log {d}/nginx.err;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {d}/t1; proxy_temp_path {d}/t2; fastcgi_temp_path {d}/t3;
  uwsgi_temp_path {d}/t4; scgi_temp_path {d}/t5;
  server {{
    listen {ADDR_A}:{port} ssl;
    ssl_certificate {d}/web.pem; ssl_certificate_key {d}/web.key;
    ssl_protocols TLSv1.3;
    location / {{ return 200 "ok\\n"; }}
  }}
}}
""")
    return conf


class Bench:
    def __init__(self, a):
        self.a = a
        self.procs = []

    def spawn(self, argv, ns=NS_A):
        p = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        self.procs.append(p)
        return p

    def wait_listen(self, port, limit=10.0):
        t = time.monotonic()
        while time.monotonic() - t < limit:
            r = subprocess.run(["ip", "netns", "exec", NS_A, "ss", "-ltnH", f"sport = :{port}"],
                               capture_output=True, text=True)
            if r.stdout.strip():
                return True
            time.sleep(0.05)
        return False

    def probe(self, port, ca):
        r = subprocess.run(["ip", "netns", "exec", NS_B, self.a.tlskit, "probe",
                            f"{ADDR_A}:{port}", "--servername", "www.rtt.tlskit.example",
                            "--roots", ca, "--json", "--repeat", str(self.a.reps)],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return {"error": (r.stderr or r.stdout).strip()[-300:]}
        v = json.loads(r.stdout)
        flights = v.get("server_flights") or []
        return {
            "rtts": v.get("handshake_rtts"),
            "handshake_ms": v.get("handshake_ms"),
            "tcp_rtt_ms": v.get("tcp_rtt_ms"),
            "compression": v.get("compression"),
            "chain_bytes": v.get("chain_bytes"),
            "first_flight": flights[0] if flights else None,
            "flights": flights,
        }

    def curl(self, port, ca):
        if not shutil.which("curl"):
            return {"error": "curl not installed"}
        hs = []
        for _ in range(self.a.reps):
            r = subprocess.run(["ip", "netns", "exec", NS_B, "curl", "-s", "-o", "/dev/null",
                                "--cacert", ca, "--resolve",
                                f"www.rtt.tlskit.example:{port}:{ADDR_A}",
                                "-w", "%{time_connect} %{time_appconnect}",
                                f"https://www.rtt.tlskit.example:{port}/"],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                return {"error": f"curl exit {r.returncode}: {r.stderr.strip()[-200:]}"}
            c, a = (float(x) for x in r.stdout.split())
            hs.append((a - c) * 1000)
        ms = statistics.median(hs)
        return {"handshake_ms": round(ms, 1), "rtts": round(ms / (2 * DELAY_MS))}

    def run(self):
        why = can_run()
        if why:
            log(f"skipped: {why}")
            return {"skipped": why}
        d = tempfile.mkdtemp(prefix="tlskit-rtt-")
        nd = None
        out = {"delay_ms_each_way": DELAY_MS, "reps": self.a.reps, "servers": {}}
        try:
            make_pki(self.a.tlskit, d)
            ca = os.path.join(d, "ca", "ca.pem")
            nd = subprocess.Popen([sys.executable, NETDELAY, "up", "--delay-ms", str(DELAY_MS),
                                   "--ns-a", NS_A, "--ns-b", NS_B],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if nd.stdout.readline().strip() != "ready":
                return {"skipped": "netdelay did not come up: " + nd.stderr.read()[-300:]}
            servers = [
                ("tlskit serve (compression)", 8443,
                 [self.a.tlskit, "serve", "--listen", f"{ADDR_A}:8443", "--cert",
                  f"{d}/web.pem", "--key", f"{d}/web.key", "--respond", "http"]),
                ("tlskit serve --compress none", 8444,
                 [self.a.tlskit, "serve", "--listen", f"{ADDR_A}:8444", "--cert",
                  f"{d}/web.pem", "--key", f"{d}/web.key", "--respond", "http",
                  "--compress", "none"]),
            ]
            nginx = self.a.nginx or shutil.which("nginx") or "/usr/sbin/nginx"
            if os.path.exists(nginx):
                servers.append(("nginx (OpenSSL 3.0)", 8445,
                                [nginx, "-p", d, "-c", nginx_conf(d, 8445)]))
            else:
                out["servers"]["nginx (OpenSSL 3.0)"] = {"error": "nginx not installed"}
            for label, port, argv in servers:
                self.spawn(argv)
                if not self.wait_listen(port):
                    out["servers"][label] = {"error": "did not start"}
                    continue
                log(f"{label}: probe and curl, {self.a.reps} handshakes each")
                out["servers"][label] = {"probe": self.probe(port, ca),
                                         "curl": self.curl(port, ca)}
            with open(os.path.join(d, "web.pem"), "rb") as f:
                out["cert_pem_bytes"] = len(f.read())
        finally:
            for p in self.procs:
                p.terminate()
            for p in self.procs:
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
            if nd:
                nd.terminate()
                try:
                    nd.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    nd.kill()
            for ns in (NS_A, NS_B):
                subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree(d, ignore_errors=True)
        return out


def render(out):
    L = ["", "## Round trips of a full TLS 1.3 handshake on a 50 ms link", ""]
    if not out or out.get("skipped"):
        L.append(f"Skipped: {(out or {}).get('skipped', 'not run')}.")
        return L
    some = next((s["probe"] for s in out["servers"].values()
                 if isinstance(s.get("probe"), dict) and s["probe"].get("chain_bytes")), {})
    L.append(f"Two network namespaces, {out['delay_ms_each_way']} ms each way "
             "(tests/tools/netdelay); the same key and certificate for every server "
             f"({some.get('chain_bytes', '?')} bytes of certificates, a leaf with {NAMES} "
             f"names); medians of {out['reps']} handshakes. Round trips count the TLS "
             "handshake after TCP's own connect. `tlskit probe` offers certificate "
             "compression (brotli, zlib); Debian's curl (OpenSSL 3.0) does not.")
    L.append("")
    L.append("| server | probe: round trips | probe: handshake ms | server's first flight "
             "| curl: round trips | curl: handshake ms |")
    L.append("|---|---|---|---|---|---|")
    for label, s in out["servers"].items():
        if "error" in s:
            L.append(f"| {label} | n/a ({s['error']}) | | | | |")
            continue
        p, c = s.get("probe", {}), s.get("curl", {})
        if "error" in p:
            pr = ["n/a", "", ""]
        else:
            ff = p.get("first_flight") or {}
            more = len(p.get("flights") or []) - 1
            tail = f", then {more} more" if more > 0 else ""
            pr = [str(p.get("rtts")), f"{p.get('handshake_ms', 0):.1f}",
                  f"{ff.get('bytes', '?')} B / {ff.get('segments', '?')} segments{tail}"]
        cr = (["n/a", c.get("error", "")] if "error" in c
              else [str(c.get("rtts")), f"{c.get('handshake_ms', 0):.1f}"])
        L.append(f"| {label} | " + " | ".join(pr + cr) + " |")
    return L


def targets(out):
    if not out or out.get("skipped"):
        return ["- round trips at 50 ms RTT: not measured (" +
                (out or {}).get("skipped", "not run") + ")"]
    t = out["servers"].get("tlskit serve (compression)", {}).get("probe", {})
    n = out["servers"].get("nginx (OpenSSL 3.0)", {}).get("probe", {})
    ok = t.get("rtts") == 1
    return [f"- full handshake, ~23 KB chain, 50 ms RTT: tlskit serve {t.get('rtts', 'n/a')} "
            f"round trip(s) (target 1 with a client that offers compression: "
            f"{'MET' if ok else 'MISSED'}); nginx {n.get('rtts', 'n/a')}"]


def add_args(p):
    p.add_argument("--tlskit", required=True, help="the tlskit binary")
    p.add_argument("--nginx", default=None, help="nginx binary (default: on PATH)")
    p.add_argument("--reps", type=int, default=5, help="handshakes per client and server")


def options(**kw):
    p = argparse.ArgumentParser()
    add_args(p)
    a = p.parse_args(["--tlskit", kw.pop("tlskit")])
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_args(p)
    p.add_argument("--out", default=os.path.join(HERE, "out"))
    a = p.parse_args()
    out = Bench(a).run()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "rtt.json"), "w") as f:
        json.dump(out, f, indent=1)
    with open(os.path.join(a.out, "rtt.md"), "w") as f:
        f.write("\n".join(render(out) + [""] + targets(out)) + "\n")
    print("\n".join(render(out) + [""] + targets(out)))
    return 0 if not out.get("skipped") else 2


if __name__ == "__main__":
    sys.exit(main())
