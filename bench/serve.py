#!/usr/bin/env python3
"""Terminator benchmark: `tlskit serve` against nginx and `openssl s_server` (issue 5).

Called by harness.py (bench/run.sh); can also run on its own:

    python3 bench/serve.py --tlskit target/release/tlskit --tls-load target/release/tls-load \
        [--data bench/data] [--out bench/out] [--rounds 9] [--count 5000]

writes bench/out/serve.json and bench/out/serve.md. See bench/README.md ("Terminator").
Python standard library only.

What is measured, for every server with the same key, chain (P-256 leaf + intermediate),
protocol (TLS 1.3 only), cipher suite (TLS_AES_128_GCM_SHA256, the only one the client
offers), key-exchange group (X25519: the only one the client offers; nginx
`ssl_ecdh_curve X25519`, s_server `-groups X25519`) and request (`GET /hello.txt`,
`Connection: close`, a small body back):

- server CPU time per handshake: utime+stime of the server process(es) (/proc/PID/stat;
  nginx: master + worker) around a fixed number of handshakes after a warm-up; the
  server pinned to CPU 0 (`taskset -c 0`), the generator (bench/src/bin/tls-load.rs) to
  CPU 1. Full handshakes (the client keeps no ticket) and resumed ones (TLS 1.3 PSK-DHE
  with the ticket of the previous connection). Rounds interleave the servers; medians.
- handshakes per second of the same runs, with the generator's own CPU use, so a rate is
  only read as the server's when the generator was not saturated.
- server RSS per idle TLS connection: N handshakes completed and held open, RSS delta / N.
- tlskit process start to `listening on` with an N-anchor snapshot as --client-ca.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SERVERS = ["tlskit", "tlskit-before", "bare-rustls", "nginx", "s_server"]
LABEL = {
    "tlskit": "tlskit serve --respond http",
    "tlskit-before": "tlskit serve, --tlskit-before binary",
    "bare-rustls": "bare rustls (bench/src/bin/bare-rustls.rs)",
    "nginx": "nginx (1 worker)",
    "s_server": "openssl s_server -HTTP",
}
CLK = os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") // 1024


def log(msg):
    print(f"[serve {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, limit=10.0):
    t = time.monotonic()
    while time.monotonic() - t < limit:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def proc_cpu(pids, split=False):
    """utime+stime in seconds, summed over pids (each includes all its threads);
    split=True: (utime, stime)."""
    u = st = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        u += int(rest[11])
        st += int(rest[12])
    return (u / CLK, st / CLK) if split else (u + st) / CLK


def proc_rss_kib(pids):
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/statm") as f:
            total += int(f.read().split()[1]) * PAGE_KIB
    return total


GENERATOR_LIMIT_S = 180


def watchdog(proc, limit=GENERATOR_LIMIT_S):
    """Kill a generator that hangs (a server that stopped answering) after `limit` s."""
    import threading
    t = threading.Timer(limit, lambda: proc.poll() is None and proc.kill())
    t.daemon = True
    t.start()


class Server:
    def __init__(self, name, argv, port=None, cwd=None, ready_line=False):
        self.name = name
        self.argv = argv
        self.port = port
        self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE if ready_line else subprocess.DEVNULL)
        if ready_line:
            while True:
                line = self.proc.stderr.readline().decode(errors="replace")
                if not line:
                    raise RuntimeError(f"{name} exited before it was ready")
                if line.startswith("listening on "):
                    self.port = int(line.rsplit(":", 1)[1])
                    break
            # Keep draining stderr so the server never blocks on a full pipe.
            import threading
            threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()
        elif not wait_port(self.port, self.proc):
            self.stop()
            raise RuntimeError(f"{name} did not start listening on port {self.port}")
        time.sleep(0.2)
        self.pids = [self.proc.pid] + children(self.proc.pid)

    def addr(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def nginx_conf(d, port, pki, workers=1):
    for sub in ("tmp", "logs"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    conf = f"""
worker_processes {workers};
daemon off;
pid {d}/nginx.pid;
error_log {d}/logs/error.log warn;
worker_rlimit_nofile 20000;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {pki}/chain.pem;
        ssl_certificate_key {pki}/leaf.key;
        ssl_protocols TLSv1.3;
        ssl_ecdh_curve X25519;
        ssl_session_tickets on;
        keepalive_timeout 65;
        location / {{ return 200 "hello from nginx\\n"; }}
    }}
}}
"""
    path = os.path.join(d, "nginx.conf")
    with open(path, "w") as f:
        f.write(conf)
    return path


class Bench:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="tlskit-serve-bench-")
        self.pki = os.path.join(self.tmp, "pki")
        self.servers = {}
        self.missing = {}
        self.taskset = shutil.which("taskset")
        self.ncpu = os.cpu_count() or 1

    def wanted(self, name):
        return not self.a.only or name in self.a.only.split(",")

    def server_ncpu(self):
        """CPUs in --server-cpus (a taskset list such as 0 or 0,1 or 0-3)."""
        n = 0
        for part in self.a.server_cpus.split(","):
            lo, _, hi = part.partition("-")
            n += int(hi or lo) - int(lo) + 1
        return n if self.taskset and self.ncpu >= 2 else self.ncpu

    def pin(self, cpu):
        """taskset for the server (cpu 0: the CPUs of --server-cpus) or the generator (cpu 1:
        CPU 1 when the server has CPU 0 alone, else unpinned)."""
        rt = ["chrt", "-f", "10"] if self.a.rt else []
        if not self.taskset or self.ncpu < 2:
            return rt
        if cpu == 0:
            return rt + [self.taskset, "-c", self.a.server_cpus]
        return rt + ([self.taskset, "-c", "1"] if self.a.server_cpus == "0" else [])

    # ---------- servers ----------
    def start(self):
        subprocess.run([self.a.tls_load, "pki", self.pki], check=True)
        www = os.path.join(self.tmp, "www")
        os.makedirs(www)
        # s_server -HTTP sends the file as it is: it must hold the whole HTTP response.
        body = "hello from s_server\n"
        with open(os.path.join(www, "hello.txt"), "w", newline="") as f:
            f.write(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}"
                    f"\r\nConnection: close\r\n\r\n{body}")
        p = lambda n: os.path.join(self.pki, n)
        for name, binary in (("tlskit", self.a.tlskit), ("tlskit-before", self.a.tlskit_before)):
            if not binary or not self.wanted(name):
                continue
            try:
                self.servers[name] = Server(name, self.pin(0) + [
                    binary, "serve", "--listen", "127.0.0.1:0", "--cert", p("chain.pem"),
                    "--key", p("leaf.key"), "--respond", "http", "--max-connections", "20000"],
                    ready_line=True)
            except (OSError, RuntimeError) as e:
                self.missing[name] = str(e)
        nginx = self.a.nginx if os.access(self.a.nginx, os.X_OK) else None
        if not self.wanted("nginx"):
            nginx = None
        elif nginx and self.a.group == "x25519":
            d = os.path.join(self.tmp, "nginx")
            os.makedirs(d)
            port = free_port()
            # One worker per CPU the servers may use (tlskit and bare rustls run a runtime
            # worker per CPU).
            conf = nginx_conf(d, port, self.pki, workers=self.server_ncpu())
            try:
                self.servers["nginx"] = Server("nginx", self.pin(0) + [
                    nginx, "-p", d, "-c", conf, "-e", os.path.join(d, "logs", "error.log")],
                    port=port)
            except (OSError, RuntimeError) as e:
                self.missing["nginx"] = f"{e} (see {d}/logs/error.log)"
        elif self.wanted("nginx"):
            self.missing["nginx"] = f"no nginx at {self.a.nginx} (apt-get install nginx-light)"
        bare = self.a.bare_rustls or os.path.join(os.path.dirname(self.a.tls_load), "bare-rustls")
        try:
            if not self.wanted("bare-rustls"):
                raise RuntimeError("not selected (--only)")
            self.servers["bare-rustls"] = Server("bare-rustls", self.pin(0) + [
                bare, p("chain.pem"), p("leaf.key")], ready_line=True)
        except (OSError, RuntimeError) as e:
            self.missing["bare-rustls"] = str(e)
        openssl = shutil.which("openssl") if self.wanted("s_server") else None
        if self.a.group != "x25519":
            # OpenSSL 3.0 (nginx, s_server here) has no ML-KEM: the hybrid rows are rustls only.
            self.missing["nginx"] = self.missing["s_server"] = "OpenSSL 3.0 has no ML-KEM"
            nginx = openssl = None
        if openssl:
            port = free_port()
            try:
                self.servers["s_server"] = Server("s_server", self.pin(0) + [
                    openssl, "s_server", "-accept", f"127.0.0.1:{port}", "-cert", p("leaf.pem"),
                    "-cert_chain", p("inter.pem"), "-key", p("leaf.key"), "-tls1_3",
                    "-groups", "X25519", "-HTTP", "-quiet"], port=port, cwd=www)
            except (OSError, RuntimeError) as e:
                self.missing["s_server"] = str(e)
        else:
            self.missing.setdefault("s_server", "openssl not installed" if self.wanted("s_server")
                                    else "not selected (--only)")

    def stop(self):
        for s in self.servers.values():
            s.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def version(self, name):
        try:
            if name == "nginx":
                r = subprocess.run([self.a.nginx, "-v"], capture_output=True, text=True)
                return r.stderr.strip().replace("nginx version: ", "")
            if name == "s_server":
                return subprocess.run(["openssl", "version"], capture_output=True,
                                      text=True).stdout.strip()
            return subprocess.run([self.a.tlskit, "--version"], capture_output=True,
                                  text=True).stdout.strip()
        except OSError:
            return "unknown"

    # ---------- one measurement ----------
    def handshakes(self, name, resume, count, warmup):
        srv = self.servers[name]
        argv = self.pin(1) + [self.a.tls_load, "run", srv.addr(), "--count", str(count),
                              "--warmup", str(warmup), "--conc", str(self.a.conc),
                              "--path", "/hello.txt", "--group", self.a.group]
        if resume:
            argv.append("--resume")
        g = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        watchdog(g)
        line = g.stdout.readline().strip()
        if line != "warm":
            g.kill()
            err = g.stderr.read().strip()
            g.wait()
            return {"status": "error", "note": (err or line or "no output")[:300]}
        u0, s0 = proc_cpu(srv.pids, split=True)
        g.stdin.write("go\n")
        g.stdin.flush()
        out = g.stdout.readline()
        u1, s1 = proc_cpu(srv.pids, split=True)
        c0, c1 = u0 + s0, u1 + s1
        g.wait()
        try:
            rec = json.loads(out)
        except ValueError:
            return {"status": "error", "note": (g.stderr.read() or "no JSON")[:300]}
        ok = rec["ok"]
        rec["status"] = "ok" if ok and not rec["failed"] else "error"
        rec["server_cpu_s"] = round(c1 - c0, 3)
        rec["server_cpu_us_per_hs"] = (c1 - c0) / ok * 1e6 if ok else None
        rec["server_user_us_per_hs"] = (u1 - u0) / ok * 1e6 if ok else None
        rec["server_sys_us_per_hs"] = (s1 - s0) / ok * 1e6 if ok else None
        rec["rate_per_s"] = ok / rec["wall_s"] if rec["wall_s"] else None
        rec["server_util"] = (c1 - c0) / rec["wall_s"] if rec["wall_s"] else None
        rec["client_util"] = rec["client_cpu_s"] / rec["wall_s"] if rec["wall_s"] else None
        rec["tickets_per_hs"] = rec["tickets_received"] / ok if ok else None
        if resume and rec["resumed"] != ok:
            rec["note"] = f"only {rec['resumed']} of {ok} handshakes resumed"
        if not resume and rec["resumed"]:
            rec["note"] = f"{rec['resumed']} handshakes resumed in the full-handshake run"
        return rec

    def idle_memory(self, name, n):
        srv = self.servers[name]
        # Let the allocator settle after the CPU rounds, then measure.
        time.sleep(0.5)
        pids = [srv.proc.pid] + children(srv.proc.pid)
        base = proc_rss_kib(pids)
        g = subprocess.Popen(self.pin(1) + [self.a.tls_load, "hold", srv.addr(), "--count",
                                            str(n)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        watchdog(g)
        line = g.stdout.readline().strip()
        if not line.startswith("ready"):
            g.kill()
            err = g.stderr.read().strip()
            g.wait()
            return {"status": "error", "note": (err or line or "no output")[:300]}
        time.sleep(0.5)
        held = proc_rss_kib(pids)
        g.stdin.close()
        g.wait()
        return {"status": "ok", "connections": n, "rss_before_kib": base, "rss_held_kib": held,
                "per_conn_kib": (held - base) / n}

    # ---------- start to ready ----------
    def start_to_ready(self):
        res = {"samples": {}, "anchors": None}
        bundles = []
        cadir = os.path.join(self.a.data, "ca") if self.a.data else ""
        if os.path.isdir(cadir):
            for f in os.listdir(cadir):
                if f.startswith("bundle-") and f.endswith(".pem"):
                    bundles.append((int(f[7:-4]), os.path.join(cadir, f)))
        if not bundles:
            res["note"] = f"no CA bundles in {cadir} (bench/run.sh generates them)"
            return res
        n, bundle = max(bundles)
        snap = os.path.join(self.tmp, f"ca-{n}.tks")
        r = subprocess.run([self.a.tlskit, "store", "build", bundle, "-o", snap],
                           capture_output=True, text=True)
        if r.returncode != 0:
            res["note"] = f"tlskit store build failed: {r.stderr.strip()[:200]}"
            return res
        res["anchors"] = n
        p = lambda x: os.path.join(self.pki, x)
        variants = {
            "no client CA": [],
            f"snapshot of {n:,} anchors": ["--client-ca", snap],
            f"PEM bundle of {n:,} anchors": ["--client-ca", bundle],
        }
        for _ in range(self.a.starts):
            for label, extra in variants.items():
                if label.startswith("PEM") and len(res["samples"].get(label, [])) >= 3:
                    continue
                argv = [self.a.tlskit, "serve", "--listen", "127.0.0.1:0", "--cert",
                        p("chain.pem"), "--key", p("leaf.key"), "--respond", "http",
                        "--no-watch"] + extra
                t0 = time.monotonic()
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                ms = None
                for raw in proc.stderr:
                    if raw.startswith(b"listening on "):
                        ms = (time.monotonic() - t0) * 1e3
                        break
                proc.terminate()
                proc.wait()
                if ms is not None:
                    res["samples"].setdefault(label, []).append(round(ms, 2))
        res["median_ms"] = {k: statistics.median(v) for k, v in res["samples"].items()}
        return res

    # ---------- everything ----------
    def run(self):
        # SIGTERM (e.g. from `timeout`) ends the run through `finally`: servers stopped.
        import signal
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        out = {"meta": {"rt": self.a.rt, "server_cpus": self.a.server_cpus, "group": self.a.group, "count": self.a.count, "warmup": self.a.warmup, "rounds": self.a.rounds,
                        "conc": self.a.conc, "hold": self.a.hold,
                        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
                        "nproc": self.ncpu, "pinned": bool(self.pin(0))},
               "runs": {}, "memory": {}, "missing": {}}
        try:
            self.start()
            out["missing"] = dict(self.missing)
            out["meta"]["versions"] = {k: self.version(k) for k in self.servers}
            out["meta"]["nginx_workers"] = self.server_ncpu()
            names = [s for s in SERVERS if s in self.servers]
            for r in range(self.a.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for mode in ("full", "resumed"):
                    for name in order:
                        rec = self.handshakes(name, mode == "resumed", self.a.count, self.a.warmup)
                        out["runs"].setdefault(mode, {}).setdefault(name, []).append(rec)
                        log(f"round {r + 1} {mode:7} {name:8}: "
                            f"{rec.get('server_cpu_us_per_hs') or 0:7.1f} µs server CPU/hs "
                            f"(user {rec.get('server_user_us_per_hs') or 0:.0f}), "
                            f"{rec.get('rate_per_s') or 0:6.0f}/s, server {rec.get('server_util') or 0:.2f}"
                            f" CPU, generator {rec.get('client_util') or 0:.2f} CPU, "
                            f"tickets/hs {rec.get('tickets_per_hs')} {rec.get('note', '')}")
            for name in names if not self.a.skip_extra else []:
                if name == "s_server":
                    # s_server serves one connection at a time: a second one never
                    # completes its handshake while the first is held.
                    out["memory"][name] = {"status": "n/a",
                                           "note": "serves one connection at a time"}
                    continue
                out["memory"][name] = self.idle_memory(name, self.a.hold)
                log(f"idle memory {name}: {out['memory'][name]}")
            for name in names:
                if self.servers[name].proc.poll() is not None:
                    out["missing"][name] = "exited during the benchmark"
            out["start"] = {} if self.a.skip_extra else self.start_to_ready()
            log(f"start to ready: {out['start'].get('median_ms')}")
        finally:
            self.stop()
        out["meta"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        out["summary"] = summarize(out)
        return out


def med(recs, key):
    vals = [r[key] for r in recs if r.get("status") == "ok" and r.get(key) is not None]
    return statistics.median(vals) if vals else None


def summarize(out):
    s = {}
    for mode, per in out["runs"].items():
        for name, recs in per.items():
            s.setdefault(mode, {})[name] = {
                k: med(recs, k) for k in ("server_cpu_us_per_hs", "server_user_us_per_hs",
                                          "server_sys_us_per_hs", "rate_per_s", "server_util",
                                          "client_util", "tickets_per_hs")}
            s[mode][name]["rounds_ok"] = sum(1 for r in recs if r.get("status") == "ok")
            s[mode][name]["notes"] = sorted({r["note"] for r in recs if r.get("note")})
    return s


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def render(out):
    """Markdown lines for results.md / serve.md."""
    if not out.get("meta"):
        return []
    m, s = out["meta"], out.get("summary", {})
    w = m.get("nginx_workers", 1)
    LABEL["nginx"] = f"nginx ({w} worker{'s' if w != 1 else ''})"
    cpus = m.get("server_cpus", "0")
    L = [f"\n## Terminator: CPU per TLS 1.3 handshake ({m.get('group', 'x25519').upper()}, "
         f"server on CPU {cpus})\n"]
    vers = m.get("versions", {})
    L.append(f"Servers: {', '.join(f'{LABEL[k]} ({v})' for k, v in vers.items())}. Same P-256 "
             "key and chain (leaf + intermediate), TLS 1.3 only, TLS_AES_128_GCM_SHA256, "
             f"{m.get('group', 'x25519').upper()} (the only group the client offers), "
             "`GET /hello.txt` with `Connection: close` and a small body back, no certificate "
             "compression (OpenSSL 3.0 has none). "
             + (f"Server on CPU 0, generator (`tls-load`, rustls + aws-lc-rs, {m['conc']} threads) "
                "on CPU 1." if m.get("server_cpus", "0") == "0" else
                f"Server on CPUs {m['server_cpus']}, generator (`tls-load`, {m['conc']} threads) "
                "unpinned, sharing them.")
             + (" Servers and generator under `chrt -f 10` (SCHED_FIFO)." if m.get("rt") else "")
             + f" Server CPU = utime+stime of the server "
             f"process(es) over {m['count']:,} handshakes after {m['warmup']} warm-up, median of "
             f"{m['rounds']} interleaved rounds. Load average {m['loadavg_start'][0]} at start, "
             f"{m.get('loadavg_end', ['?'])[0]} at end.\n")
    L.append("| server | full: server CPU µs/handshake | resumed: server CPU µs/handshake | "
             "full: handshakes/s (server / generator CPU) | resumed: handshakes/s (server / "
             "generator CPU) | tickets per handshake (full / resumed) |")
    L.append("|---|---|---|---|---|---|")
    for name in SERVERS:
        f = s.get("full", {}).get(name)
        r = s.get("resumed", {}).get(name)
        if not f and not r:
            why = out.get("missing", {}).get(name, "not run")
            if name == "tlskit-before" or "--only" in why:
                continue  # not asked for
            L.append(f"| {LABEL[name]} | n/a ({why}) | | | | |")
            continue
        f, r = f or {}, r or {}

        def rate(x):
            if x.get("rate_per_s") is None:
                return "n/a"
            sat = " (generator-bound)" if (x.get("client_util") or 0) >= 0.9 else \
                " (server-bound)" if (x.get("server_util") or 0) >= 0.9 else ""
            return (f"{x['rate_per_s']:,.0f} ({fmt(x.get('server_util'), '.2f')} / "
                    f"{fmt(x.get('client_util'), '.2f')}){sat}")
        L.append(f"| {LABEL[name]} | {fmt(f.get('server_cpu_us_per_hs'), ',.0f')} | "
                 f"{fmt(r.get('server_cpu_us_per_hs'), ',.0f')} | {rate(f)} | {rate(r)} | "
                 f"{fmt(f.get('tickets_per_hs'), '.1f')} / {fmt(r.get('tickets_per_hs'), '.1f')} |")
    L.append("")
    for mode in ("full", "resumed"):
        tk = s.get(mode, {}).get("tlskit", {}).get("server_cpu_us_per_hs")
        bare = s.get(mode, {}).get("bare-rustls", {}).get("server_cpu_us_per_hs")
        if tk and bare:
            L.append(f"- {mode}: tlskit / bare rustls CPU per handshake = **{tk / bare:.3f}×** "
                     f"(target ≤ 1.03×: {'met' if tk / bare <= 1.03 else 'NOT met'})")
        tb = s.get(mode, {}).get("tlskit-before", {}).get("server_cpu_us_per_hs")
        if tb and bare:
            L.append(f"- {mode}: tlskit before / bare rustls CPU per handshake = "
                     f"**{tb / bare:.3f}×**")
        for peer in ("nginx", "s_server"):
            pv = s.get(mode, {}).get(peer, {}).get("server_cpu_us_per_hs")
            if tk and pv:
                target = " (target ≥ 1.3×: " + ("met" if pv / tk >= 1.3 else "NOT met") + ")" \
                    if peer == "nginx" and mode == "full" else ""
                L.append(f"- {mode}: {LABEL[peer]} / tlskit CPU per handshake = "
                         f"**{pv / tk:.2f}×**{target}")
    notes = [f"{name} {mode}: {n}" for mode, per in s.items() for name, x in per.items()
             for n in x.get("notes", [])]
    for n in notes:
        L.append(f"- note: {n}")
    L.append("- handshakes/s is the rate of this setup, not a capacity: a rate is the server's "
             "limit only where the server used ≥ 90% of its core (marked \"server-bound\"); "
             "\"generator-bound\" marks runs where the generator did. Otherwise both waited "
             "on each other and on the machine (loopback wake-ups, other work on a shared VM).")
    L.append(f"- CPU times come from /proc in clock ticks (10 ms): over {m['count']:,} handshakes "
             f"a resolution of {10_000 / m['count']:.0f} µs per handshake.")

    mem = out.get("memory", {})
    if mem:
        L.append(f"\n**Server memory per idle TLS connection** ({m['hold']:,} connections, "
                 "handshake completed, then held open and silent; RSS delta / connections; "
                 "nginx: master + worker; target ≤ 32 KiB for tlskit):\n")
        L.append("| server | RSS before | RSS with connections held | per connection |")
        L.append("|---|---|---|---|")
        for name in SERVERS:
            x = mem.get(name)
            if not x:
                continue
            if x.get("status") != "ok":
                L.append(f"| {LABEL[name]} | n/a ({x.get('note')}) | | |")
                continue
            L.append(f"| {LABEL[name]} | {x['rss_before_kib'] / 1024:.1f} MiB | "
                     f"{x['rss_held_kib'] / 1024:.1f} MiB | **{x['per_conn_kib']:.1f} KiB** |")

    st = out.get("start", {})
    if st.get("median_ms"):
        L.append("\n**`tlskit serve` process start to `listening on`** (wall time from spawn to "
                 "the line on stderr; medians; target ≤ 50 ms with the snapshot):\n")
        L.append("| --client-ca | median | samples |")
        L.append("|---|---|---|")
        for k, v in st["median_ms"].items():
            L.append(f"| {k} | **{v:.1f} ms** | {', '.join(f'{x:.1f}' for x in st['samples'][k])} |")
    elif st.get("note"):
        L.append(f"\nStart to ready: not measured: {st['note']}")
    return L


def targets(out):
    """Issue 5's targets as lines for the "Issue targets" section."""
    s = out.get("summary", {})

    def res(ok):
        return "n/a" if ok is None else ("met" if ok else "NOT met")
    lines = []
    for mode in ("full", "resumed"):
        tk = s.get(mode, {}).get("tlskit", {}).get("server_cpu_us_per_hs")
        ng = s.get(mode, {}).get("nginx", {}).get("server_cpu_us_per_hs")
        r = ng / tk if tk and ng else None
        lines.append(f"- terminator, {mode} TLS 1.3 handshakes: server CPU ≥ 1.3× cheaper than "
                     f"nginx: {res(None if r is None else r >= 1.3)} "
                     f"({'n/a' if r is None else f'{r:.2f}×'})")
        bare = s.get(mode, {}).get("bare-rustls", {}).get("server_cpu_us_per_hs")
        r = tk / bare if tk and bare else None
        lines.append(f"- terminator, {mode} TLS 1.3 handshakes: server CPU within 1.10× of a bare "
                     f"rustls server: {res(None if r is None else r <= 1.10)} "
                     f"({'n/a' if r is None else f'{r:.2f}×'})")
    mem = out.get("memory", {}).get("tlskit", {})
    v = mem.get("per_conn_kib") if mem.get("status") == "ok" else None
    lines.append(f"- terminator memory per idle TLS connection ≤ 32 KiB: "
                 f"{res(None if v is None else v <= 32)} ({'n/a' if v is None else f'{v:.1f} KiB'})")
    st = out.get("start", {})
    snap = [v for k, v in st.get("median_ms", {}).items() if k.startswith("snapshot")]
    n = st.get("anchors") or 0
    ok = None if not snap or n < 100000 else snap[0] <= 50
    detail = f"{snap[0]:.1f} ms with {n:,} anchors" if snap else "n/a"
    lines.append(f"- start to ready with a 100,000-anchor snapshot ≤ 50 ms: {res(ok)} ({detail})")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_args(p)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    a = p.parse_args()
    out = Bench(a).run()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "serve.json"), "w") as f:
        json.dump(out, f, indent=1)
    with open(os.path.join(a.out, "serve.md"), "w") as f:
        f.write("\n".join(render(out)) + "\n")
    print("\n".join(render(out)))


def add_args(p):
    p.add_argument("--tlskit", required=True)
    p.add_argument("--tls-load", dest="tls_load", required=True)
    p.add_argument("--nginx", default="/usr/sbin/nginx")
    p.add_argument("--data", default="")
    # 9 rounds of 5,000: runs of 5 x 2,000 moved a ratio by up to 0.15 between runs
    # (10 ms clock ticks are 5 µs per handshake at 2,000).
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--count", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--conc", type=int, default=4)
    p.add_argument("--hold", type=int, default=2000)
    p.add_argument("--starts", type=int, default=9)
    p.add_argument("--server-cpus", dest="server_cpus", default="0",
                   help="CPUs the servers are pinned to (taskset list; default 0, the generator on 1)")
    p.add_argument("--group", default="x25519", choices=["x25519", "x25519mlkem768"],
                   help="key-exchange group the generator offers (the only one)")
    p.add_argument("--bare-rustls", dest="bare_rustls", default="",
                   help="bare rustls server binary [default: next to --tls-load]")
    p.add_argument("--rt", action="store_true",
                   help="run the servers and the generator under chrt -f 10 (SCHED_FIFO; needs "
                        "root): on a VM shared with other work, a server that falls behind is "
                        "otherwise preempted like a batch job and its rate and CPU time measure "
                        "the machine (bench/README.md)")
    p.add_argument("--tlskit-before", dest="tlskit_before", default="",
                   help="a second tlskit binary measured in the same rounds (before and after)")
    p.add_argument("--only", default="",
                   help="comma-separated servers to run (tlskit,tlskit-before,bare-rustls,nginx,s_server)")
    p.add_argument("--skip-extra", dest="skip_extra", action="store_true",
                   help="handshakes only: no idle-memory or start-to-ready measurements")


def options(**kw):
    """The defaults of add_args, overridden by kw (for harness.py)."""
    p = argparse.ArgumentParser()
    add_args(p)
    a = p.parse_args(["--tlskit", kw.pop("tlskit"), "--tls-load", kw.pop("tls_load")])
    for k, v in kw.items():
        setattr(a, k, v)
    return a


if __name__ == "__main__":
    main()
