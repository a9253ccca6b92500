#!/usr/bin/env python3
"""Peer benchmark driver: runs every peer program on the same data, one at a time, and
writes bench/out/results.{json,md} and bench/out/store_load.svg.

Called by bench/run.sh (which builds the programs and generates the data); see
bench/README.md. Python standard library only.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve  # noqa: E402  (bench/serve.py: the terminator benchmark)
import rtt  # noqa: E402  (bench/rtt.py: round trips on a 50 ms link)

IMPLS = ["openssl", "gnutls", "go", "rustls", "tlskit"]
PEER_LABEL = {
    "openssl": ("OpenSSL", "X509_STORE_load_file", "X509_verify_cert"),
    "gnutls": ("GnuTLS", "trust_list_add_trust_file", "trust_list_verify_crt2"),
    "go": ("Go", "CertPool.AppendCertsFromPEM", "Certificate.Verify"),
    "rustls": ("rustls", "RootCertStore::add", "WebPkiServerVerifier"),
    "tlskit": ("tlskit", "bench store FILE (from PEM)", "bench verify"),
    "tlskit-lib": ("tlskit library", "StoreBuilder::add_source per file", ""),
}
COLORS = {
    "openssl": "#d62728",
    "gnutls": "#9467bd",
    "go": "#17becf",
    "rustls": "#ff7f0e",
    "tlskit": "#2ca02c",
    "tlskit-snapshot": "#1f5f1f",
}


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_json(cmd, limit):
    """Run cmd with a wall-clock limit; return a record with status ok/timeout/error."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "wall_s": round(time.monotonic() - t0, 2)}
    except OSError as e:
        return {"status": "error", "note": str(e)}
    wall = round(time.monotonic() - t0, 2)
    if p.returncode != 0:
        lines = [l.strip() for l in p.stderr.strip().splitlines() if l.strip()]
        errs = [l for l in lines if "error" in l.lower()]
        msg = (errs or lines or [f"exit status {p.returncode}"])[0]
        return {"status": "error", "note": f"failed (exit {p.returncode}): {msg}"[:300],
                "wall_s": wall}
    try:
        rec = json.loads(p.stdout)
        if isinstance(rec, dict):
            rec["status"] = "ok"
            rec["wall_s"] = wall
            return rec
    except ValueError:
        pass
    for line in reversed(p.stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except ValueError:
                break
            rec["status"] = "ok"
            rec["wall_s"] = wall
            return rec
    return {"status": "error", "note": "no JSON on stdout", "wall_s": wall}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def mem_total():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def tool_version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def lock_version(root, name):
    try:
        text = open(os.path.join(root, "Cargo.lock")).read()
    except OSError:
        return "unknown"
    m = re.search(r'name = "%s"\nversion = "([^"]+)"' % re.escape(name), text)
    return m.group(1) if m else "unknown"


def fmt_ms(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if v < 1:
        return f"{v:.3f} ms"
    if v < 10:
        return f"{v:.2f} ms"
    if v < 100:
        return f"{v:.1f} ms"
    return f"{v:,.0f} ms"


def fmt_us(v):
    if v is None:
        return "n/a"
    if v < 10:
        return f"{v:.2f} µs"
    if v < 100:
        return f"{v:.1f} µs"
    return f"{v:,.0f} µs"


def fmt_n(n):
    """1,234 for an N (int or numeric string); other keys ("system") as they are."""
    if isinstance(n, str) and n.isdigit():
        n = int(n)
    return f"{n:,}" if isinstance(n, int) else str(n)


def slope(n1, t1, n2, t2):
    if not (t1 and t2) or t1 <= 0 or t2 <= 0:
        return None
    return math.log(t2 / t1) / math.log(n2 / n1)


class Bench:
    def __init__(self, a):
        self.a = a
        self.root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
        self.ns = [int(x) for x in a.ns.split(",")]
        self.limit = a.limit
        self.missing = dict(m.split("=", 1) for m in a.missing)
        self.results = {"store_load": {}, "dir_load": {}, "verify": {}, "growth": {}}
        self.tlskit_probe = {}

    # ---------- commands ----------
    def peer_cmd(self, impl, *args):
        exe = {
            "openssl": os.path.join(self.a.peer_dir, "openssl_peer"),
            "gnutls": os.path.join(self.a.peer_dir, "gnutls_peer"),
            "go": os.path.join(self.a.peer_dir, "go-peer"),
            "rustls": self.a.rustls_peer,
            "tlskit-lib": self.a.tlskit_peer,
        }[impl]
        return [exe] + [str(x) for x in args]

    def available(self, impl):
        if impl in self.missing:
            return False, self.missing[impl]
        if impl == "tlskit":
            if not self.a.tlskit or not os.access(self.a.tlskit, os.X_OK):
                return False, f"no tlskit binary at {self.a.tlskit}"
            return True, None
        exe = self.peer_cmd(impl)[0]
        if not os.access(exe, os.X_OK):
            return False, f"{exe} not built"
        return True, None

    def reps_for(self, n):
        return self.a.reps if n != max(self.ns) else max(1, min(self.a.reps, self.a.reps_max_n))

    # ---------- one measurement ----------
    def measure(self, table, key, impl, cmd, note_prefix=""):
        log(f"{table} {key} {impl}: {' '.join(os.path.relpath(c, self.root) if os.path.isabs(c) and c.startswith(self.root) else c for c in cmd)}")
        load_before = round(os.getloadavg()[0], 2)
        rec = run_json(cmd, self.limit)
        rec["loadavg_before"] = load_before
        if rec["status"] == "timeout":
            rec["note"] = f"> {self.limit:g} s (timed out)"
        if note_prefix and rec.get("note"):
            rec["note"] = note_prefix + rec["note"]
        self.results[table].setdefault(str(key), {})[impl] = rec
        shown = rec.get("median_ms", rec.get("median_us", rec.get("load_ms", rec.get("verify_us"))))
        log(f"  -> {rec['status']} {shown if shown is not None else ''} {rec.get('note', '')}")
        return rec

    def skip(self, table, key, impl, status, note):
        self.results[table].setdefault(str(key), {})[impl] = {"status": status, "note": note}

    def prior(self, table, impl, n):
        """A smaller N of the same table that timed out or failed, if any."""
        for m in self.ns:
            if m >= n:
                break
            r = self.results[table].get(str(m), {}).get(impl)
            if r and r["status"] == "timeout":
                return "skip", f"skipped: > {self.limit:g} s already at N = {m:,}"
            if r and r["status"] in ("error", "n/a"):
                return "n/a", r.get("note", "failed at a smaller N")
        return None

    # ---------- tables ----------
    def load_cmd(self, impl, path, n):
        """The command that times bundle loads (the table's and the growth rounds')."""
        if impl == "tlskit":
            return [self.a.tlskit, "bench", "store", path, "--json"]
        return self.peer_cmd(impl, "load", path, self.reps_for(n), self.limit / 3)

    def run_store_load(self):
        """The bundle table, in `--table-rounds` rounds (every N and implementation once per
        round); each cell keeps the round with the median time, and all rounds' times
        (`rounds_ms`, null for a failed round). A measurement that timed out or failed is
        not repeated in later rounds."""
        sources = [(n, os.path.join(self.a.data, "ca", f"bundle-{n}.pem")) for n in self.ns]
        if os.path.exists(self.a.system_bundle):
            sources.append(("system", self.a.system_bundle))
        rounds = 1 if self.a.quick else self.a.table_rounds
        slow = ["openssl", "gnutls"]
        fast = [i for i in IMPLS if i not in slow]
        kept = {}  # (key, impl) -> one record per round measured
        for r in range(rounds):
            self.results["store_load"] = {}
            # At each N the fast implementations take turns at going first and the
            # minute-long OpenSSL and GnuTLS loads come last, so no implementation is
            # always measured right after them (seen on this VM to slow the next
            # measurement of a two-thread load: tlskit's 10,000 cell 6.2 ms after them,
            # 3.4 ms elsewhere in the same run).
            k = r % len(fast)
            self.run_store_load_once(sources, kept, fast[k:] + fast[:k] + slow)
            for key, recs in self.results["store_load"].items():
                for impl, rec in recs.items():
                    runs = kept.setdefault((key, impl), [])
                    if not any(x is rec for x in runs):  # a failure carried over
                        runs.append(rec)
        table = {}
        for (key, impl), recs in kept.items():
            vals = [load_value(x, impl) if x.get("status") == "ok" else None for x in recs]
            ok = sorted((v, x) for v, x in zip(vals, recs) if v is not None)
            if ok:
                rec = dict(ok[len(ok) // 2][1])
                rec["rounds_ms"] = [None if v is None else round(v, 4) for v in vals]
            else:
                rec = recs[0]
            table.setdefault(key, {})[impl] = rec
        self.results["store_load"] = table

    def run_store_load_once(self, sources, kept, order):
        for key, path in sources:
            n = key if isinstance(key, int) else 0
            for impl in order:
                ok, why = self.available(impl)
                if not ok:
                    self.skip("store_load", key, impl, "n/a", why)
                    continue
                pr = self.prior("store_load", impl, n) if n else None
                if pr:
                    self.skip("store_load", key, impl, *pr)
                    continue
                failed = [x for x in kept.get((str(key), impl), []) if x.get("status") != "ok"]
                if failed:
                    # Not repeated; carried into this round for `prior` at larger N.
                    self.results["store_load"].setdefault(str(key), {})[impl] = failed[0]
                    continue
                self.measure("store_load", key, impl, self.load_cmd(impl, path, n))

    def run_growth(self):
        """The growth exponent compares two sizes, so it is measured back to back: in each
        round every implementation that loads 100,000 anchors (those that did not time out
        in the table above) loads N = 10,000 and then N = 100,000, the same commands as the
        table; the exponent of each round is computed and the median over rounds reported.
        Drift of the machine's speed between the table's two columns (seen: +-15 % within
        minutes on this VM) then cancels instead of landing in the exponent. An
        implementation whose load fails in a round is not measured again."""
        if not (10000 in self.ns and 100000 in self.ns):
            return  # (--quick stops at 10,000)
        rounds = self.a.growth_rounds
        impls = [i for i in IMPLS
                 if self.results["store_load"].get("100000", {}).get(i, {}).get("status") == "ok"]
        g = {i: {"t10k": [], "t100k": [], "exponents": [],
                 "cold_10k": [], "cold_100k": [], "cold_exponents": []} for i in impls}
        cold_ok = bool(self.a.tlskit_peer) and os.access(self.a.tlskit_peer, os.X_OK)
        active = list(impls)
        for r in range(rounds):
            for impl in list(active):
                ts, cold = [], []
                for n in (10000, 100000):
                    path = os.path.join(self.a.data, "ca", f"bundle-{n}.pem")
                    ts.append(load_value(run_json(self.load_cmd(impl, path, n), self.limit), impl))
                    # The first load of a fresh process (a server starting): one load, no
                    # warm-up; tlskit through its library peer (the CLI warms up first).
                    if impl != "tlskit" or cold_ok:
                        peer = "tlskit-lib" if impl == "tlskit" else impl
                        rec = run_json(self.peer_cmd(peer, "load", path, 1, self.limit / 3),
                                       self.limit)
                        cold.append(rec.get("median_ms") if rec.get("status") == "ok" else None)
                log(f"growth round {r + 1}/{rounds} {impl}: {ts[0]} ms, {ts[1]} ms; "
                    f"first loads {cold}")
                if None in ts or None in cold:
                    active.remove(impl)
                    log(f"growth: {impl} failed a load; not measured again")
                if ts[0] and ts[1]:
                    g[impl]["t10k"].append(ts[0])
                    g[impl]["t100k"].append(ts[1])
                    g[impl]["exponents"].append(slope(10000, ts[0], 100000, ts[1]))
                if len(cold) == 2 and cold[0] and cold[1]:
                    g[impl]["cold_10k"].append(cold[0])
                    g[impl]["cold_100k"].append(cold[1])
                    g[impl]["cold_exponents"].append(slope(10000, cold[0], 100000, cold[1]))
        for impl, d in g.items():
            for pre, key in (("", "exponents"), ("cold_", "cold_exponents")):
                if d[key]:
                    d[f"median_{pre}exponent"] = statistics.median(d[key])
                    d[f"median_{pre}10k_ms"] = statistics.median(d[f"{pre or 't'}10k"])
                    d[f"median_{pre}100k_ms"] = statistics.median(d[f"{pre or 't'}100k"])
        self.results["growth"] = g

    def run_dir_load(self):
        for n in self.ns:
            path = os.path.join(self.a.data, "ca", f"dir-{n}")
            for impl in IMPLS + ["tlskit-lib"]:
                ok, why = self.available(impl)
                if not ok:
                    self.skip("dir_load", n, impl, "n/a", why)
                    continue
                pr = self.prior("dir_load", impl, n)
                if pr:
                    self.skip("dir_load", n, impl, *pr)
                    continue
                bundle = self.results["store_load"].get(str(n), {}).get(impl, {})
                if bundle.get("status") == "timeout":
                    self.skip("dir_load", n, impl, "skip",
                              f"skipped: the bundle of the same N took > {self.limit:g} s; "
                              "one file at a time adds each certificate the same way plus a file open")
                    continue
                if impl == "tlskit":
                    cmd = [self.a.tlskit, "bench", "store", path, "--json"]
                else:
                    cmd = self.peer_cmd(impl, "loaddir", path, self.reps_for(n), self.limit / 3)
                rec = self.measure("dir_load", n, impl, cmd)
                if rec["status"] == "ok" and rec.get("anchors") not in (None, n):
                    rec["note"] = f"loaded {rec.get('anchors')} anchors, expected {n}"

    def run_verify(self):
        chain = os.path.join(self.a.data, "verify", "chain.pem")
        for n in self.ns:
            roots = os.path.join(self.a.data, "verify", f"roots-{n}.pem")
            for impl in IMPLS:
                ok, why = self.available(impl)
                if not ok:
                    self.skip("verify", n, impl, "n/a", why)
                    continue
                pr = self.prior("verify", impl, n)
                if pr:
                    self.skip("verify", n, impl, *pr)
                    continue
                load = self.results["store_load"].get(str(n), {}).get(impl, {})
                if impl != "tlskit" and load.get("status") == "timeout":
                    self.skip("verify", n, impl, "skip",
                              f"not measured: loading a store of this size took > {self.limit:g} s")
                    continue
                if impl == "tlskit":
                    cmd = [self.a.tlskit, "bench", "verify", "--roots", roots, "--cert", chain,
                           "--host", "bench.example", "--json"]
                else:
                    cmd = self.peer_cmd(impl, "verify", roots, chain, self.a.iters, self.a.verify_budget)
                rec = self.measure("verify", n, impl, cmd)
                if rec["status"] == "ok" and rec.get("valid") is False:
                    rec["status"] = "error"
                    rec["note"] = "the chain did not verify"

    # ---------- header ----------
    def versions(self):
        v = {}
        for impl in ("openssl", "gnutls", "go", "rustls"):
            ok, _ = self.available(impl)
            if ok:
                r = run_json(self.peer_cmd(impl, "version"), 30)
                v[impl] = r.get("version", "unknown")
            else:
                v[impl] = "missing"
        v["rustls"] = lock_version(self.root, "rustls") if v["rustls"] != "missing" else "missing"
        v["rustls-webpki"] = lock_version(self.root, "rustls-webpki")
        v["aws-lc-rs"] = lock_version(self.root, "aws-lc-rs")
        v["rustc"] = tool_version(["rustc", "--version"])
        if self.a.tlskit and os.access(self.a.tlskit, os.X_OK):
            v["tlskit"] = tool_version([self.a.tlskit, "--version"]) or "unknown"
        return v

    def run(self):
        started = datetime.datetime.now(datetime.timezone.utc)
        load_start = os.getloadavg()
        t0 = time.monotonic()
        meta = {
            "date": started.strftime("%Y-%m-%d %H:%M UTC"),
            "command": self.a.command,
            "machine": {
                "nproc": os.cpu_count(),
                "cpu": cpu_model(),
                "memory": mem_total(),
                "kernel": platform.release(),
                "loadavg_start": [round(x, 2) for x in load_start],
            },
            "ns": self.ns,
            "reps": self.a.reps,
            "reps_largest_n": self.reps_for(max(self.ns)),
            "table_rounds": 1 if self.a.quick else self.a.table_rounds,
            "verify_iterations": self.a.iters,
            "verify_budget_s": self.a.verify_budget,
            "limit_s": self.limit,
            "quick": self.a.quick,
            "versions": self.versions(),
            "missing": self.missing,
            "tlskit_source": self.a.tlskit_source,
        }
        try:
            meta["data"] = json.load(open(os.path.join(self.a.data, "manifest.json")))
        except (OSError, ValueError):
            meta["data"] = {}
        if load_start[0] > 0.5 * (os.cpu_count() or 1):
            log(f"warning: load average {load_start[0]:.1f} on {os.cpu_count()} CPUs: other work "
                "is running, the numbers will be noisy (results.md says so)")
        if self.a.only != "serve":
            self.run_store_load()
            self.run_growth()
            self.run_dir_load()
            self.run_verify()
        if self.a.serve_tls_load:
            log("terminator benchmark (bench/serve.py)")
            opts = serve.options(tlskit=self.a.tlskit, tls_load=self.a.serve_tls_load,
                                 nginx=self.a.serve_nginx, data=self.a.data)
            if self.a.quick:
                opts.rounds, opts.count, opts.starts = 3, 1000, 5
            self.results["serve"] = serve.Bench(opts).run()
            # The hybrid post-quantum group browsers send (rustls servers only: OpenSSL 3.0
            # has no ML-KEM), and the server on both CPUs: handshakes only.
            for key, group, cpus in (("serve_pq", "x25519mlkem768", "0"),
                                     ("serve_2cpu", "x25519", "0,1")):
                o = serve.options(tlskit=self.a.tlskit, tls_load=self.a.serve_tls_load,
                                  nginx=self.a.serve_nginx, data=self.a.data, group=group,
                                  server_cpus=cpus, skip_extra=True)
                if self.a.quick:
                    o.rounds, o.count = 3, 1000
                log(f"terminator benchmark: {group}, server CPUs {cpus}")
                self.results[key] = serve.Bench(o).run()
        if self.a.tlskit and os.path.exists(self.a.tlskit):
            log("round trips on a 50 ms link (bench/rtt.py)")
            self.results["rtt"] = rtt.Bench(rtt.options(
                tlskit=self.a.tlskit, nginx=self.a.serve_nginx,
                reps=3 if self.a.quick else 5)).run()
        meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        meta["total_s"] = round(time.monotonic() - t0, 1)
        out = {"meta": meta, **self.results}
        os.makedirs(self.a.out, exist_ok=True)
        if self.a.only == "serve":
            with open(os.path.join(self.a.out, "serve.json"), "w") as f:
                json.dump(self.results.get("serve", {}), f, indent=1)
            with open(os.path.join(self.a.out, "serve.md"), "w") as f:
                f.write("# tlskit terminator benchmark\n\nCommand: `" + self.a.command + "`\n" +
                        "\n".join(serve.render(self.results.get("serve", {}))
                                  + serve.render(self.results.get("serve_pq", {}))
                                  + serve.render(self.results.get("serve_2cpu", {}))
                                  + rtt.render(self.results.get("rtt", {}))) + "\n")
            log(f"done in {meta['total_s']} s: {self.a.out}/serve.md, serve.json")
            return
        with open(os.path.join(self.a.out, "results.json"), "w") as f:
            json.dump(out, f, indent=1)
        with open(os.path.join(self.a.out, "results.md"), "w") as f:
            f.write(render_md(out))
        with open(os.path.join(self.a.out, "store_load.svg"), "w") as f:
            f.write(render_svg(out))
        with open(os.path.join(self.a.out, "verify.svg"), "w") as f:
            f.write(render_verify_svg(out))
        log(f"done in {meta['total_s']} s: {self.a.out}/results.md, results.json, store_load.svg")


# ---------------------------------------------------------------- Markdown
def load_value(rec, impl, field="load"):
    """Median load time in ms of a record, or None."""
    if not rec or rec.get("status") != "ok":
        return None
    if impl == "tlskit":
        return rec.get("snapshot_load_ms" if field == "snapshot" else "load_ms")
    return rec.get("median_ms")


def cell_load(rec, impl, field="load"):
    if not rec:
        return "n/a"
    if rec.get("status") == "timeout":
        return rec["note"]
    if rec.get("status") == "skip":
        return "skipped (see notes)"
    v = load_value(rec, impl, field)
    if v is None:
        return "n/a"
    return fmt_ms(v)


def verify_value(rec, impl, field):
    if not rec or rec.get("status") != "ok":
        return None
    if impl == "tlskit":
        return rec.get({"call": "verify_us", "parse": "verify_us", "cached": "cached_verify_us",
                        "speedup": "two_thread_speedup"}[field])
    if field == "call":
        return rec.get("median_us")
    if field == "parse":
        return rec.get("median_parse_us", rec.get("median_us"))
    return None


def render_md(out):
    m = out["meta"]
    v = m["versions"]
    ns = m["ns"]
    notes = []

    def note_for(rec, where):
        if rec and rec.get("status") in ("error", "n/a", "skip") and rec.get("note"):
            notes.append(f"{where}: {rec['note']}")

    L = []
    L.append("# tlskit peer benchmark results\n")
    mach = m["machine"]
    # The load at the end includes the benchmark's own processes (two-thread loads, the
    # terminator benchmark's server and generator): only the start says whether other work
    # was running.
    busy = mach["loadavg_start"][0] > 0.5 * (mach["nproc"] or 1)
    if busy:
        L.append(f"> **Busy machine**: load average {mach['loadavg_start'][0]} at the start and "
                 f"{m['loadavg_end'][0]} at the end on {mach['nproc']} CPUs. Other work competed "
                 "for the CPUs, so times are inflated unevenly (most for multi-threaded code and "
                 "long loads, least for the per-call verification medians) and the two-thread "
                 "speedup is meaningless. Re-run on an idle machine before publishing.\n")
    L.append(f"- Date: {m['date']}; total run time {m['total_s']:.0f} s")
    L.append(f"- Machine: {mach['nproc']} CPUs ({mach['cpu']}), {mach['memory']} RAM, Linux "
             f"{mach['kernel']}; load average at start {mach['loadavg_start'][0]}, at end "
             f"{m['loadavg_end'][0]} (a shared machine is noisy: compare columns of one run)")
    L.append(f"- Versions: {v.get('openssl')}; GnuTLS {v.get('gnutls')}; {v.get('go')}; "
             f"rustls {v.get('rustls')} (rustls-webpki {v.get('rustls-webpki')}, aws-lc-rs "
             f"{v.get('aws-lc-rs')}); {v.get('rustc')}; "
             f"{v.get('tlskit', 'tlskit: missing')} ({m.get('tlskit_source', 'source unknown')})")
    L.append(f"- Repetitions: R = {m['reps']} loads per cell (R = {m['reps_largest_n']} at "
             f"N = {max(ns):,}; a peer stops repeating once it has spent {m['limit_s'] / 3:g} s), "
             f"medians shown; verification: median of up to {m['verify_iterations']:,} "
             f"single verifications (at most {m['verify_budget_s']:g} s) after 5 warm-up calls; "
             f"each measurement is killed after {m['limit_s']:g} s")
    d = m.get("data", {})
    if d:
        L.append(f"- Data: {d.get('max_n', '?'):,} self-signed P-256 CA certificates generated in "
                 f"{d.get('keys_and_certs_s', 0):.1f} s ({d.get('threads')} threads), the same "
                 "files for every implementation")
    L.append(f"- Command: `{m['command']}`\n")

    # store load
    cols = [str(n) for n in ns] + (["system"] if "system" in out["store_load"] else [])
    head = [fmt_n(int(c)) if c != "system" else "system bundle" for c in cols]
    L.append("## Store load from one PEM bundle (median ms)\n")
    L.append("Time from file path to a usable store, in-process; the PEM decode and the file read "
             "are inside the timing for every implementation. "
             f"The table was run {m.get('table_rounds', 1)} times (rounds); each cell is the "
             "round with the median time (each round's time: `rounds_ms` in results.json).\n")
    exps = []
    for i in range(1, len(ns)):
        exps.append((ns[i - 1], ns[i]))
    L.append("| implementation | " + " | ".join(f"N = {h}" for h in head) + " | " +
             " | ".join(f"exponent {a:,}→{b:,}" for a, b in exps) + " |")
    L.append("|---" * (1 + len(cols) + len(exps)) + "|")
    rows = [(impl, "load") for impl in IMPLS] + [("tlskit", "snapshot")]
    sl = out["store_load"]
    for impl, field in rows:
        name, api, _ = PEER_LABEL[impl]
        label = f"{name} {api}" if field == "load" else "tlskit from a snapshot (bench store, snapshot_load_ms)"
        if impl == "openssl" and v.get("openssl") not in (None, "missing"):
            label = f"{v['openssl'].split()[0]} {v['openssl'].split()[1]} {api}"
        elif impl == "gnutls":
            label = f"GnuTLS {v.get('gnutls')} {api}"
        elif impl == "go":
            label = f"Go {v.get('go', '').replace('go', '')} {api}"
        elif impl == "rustls":
            label = f"rustls {v.get('rustls')} {api}"
        cells = []
        for c in cols:
            rec = sl.get(c, {}).get(impl)
            cells.append(cell_load(rec, impl, field))
            if field == "load":
                note_for(rec, f"{name}, N = {fmt_n(c)}")
                if rec and rec.get("status") == "ok" and c != "system" and rec.get("anchors") not in (None, int(c)):
                    notes.append(f"{name}, N = {fmt_n(c)}: loaded {rec.get('anchors')} anchors")
        ex = []
        for a, b in exps:
            s = slope(a, load_value(sl.get(str(a), {}).get(impl), impl, field),
                      b, load_value(sl.get(str(b), {}).get(impl), impl, field))
            ex.append(f"{s:.2f}" if s is not None else "n/a")
        L.append(f"| {label} | " + " | ".join(cells) + " | " + " | ".join(ex) + " |")
    # tlskit extras
    extras = []
    for c in cols:
        rec = sl.get(c, {}).get("tlskit")
        if rec and rec.get("status") == "ok":
            mem, der = rec.get("memory_bytes"), rec.get("der_bytes")
            ratio = f"{mem / der:.2f}×" if mem and der else "n/a"
            look = rec.get("lookup_ns")
            extras.append((c, look, mem, der, ratio))
    if extras:
        L.append("\ntlskit store details (from `tlskit bench store --json`):\n")
        L.append("| N | subject lookup | memory | DER bytes | memory / DER |")
        L.append("|---|---|---|---|---|")
        for c, look, mem, der, ratio in extras:
            L.append(f"| {fmt_n(c)} | {f'{look:,.0f} ns' if isinstance(look, (int, float)) else 'n/a'} | "
                     f"{f'{mem:,}' if mem else 'n/a'} | {f'{der:,}' if der else 'n/a'} | {ratio} |")
    fast = []
    for c in cols:
        peers = [load_value(sl.get(c, {}).get(i), i) for i in IMPLS if i != "tlskit"]
        peers = [p for p in peers if p]
        tk = load_value(sl.get(c, {}).get("tlskit"), "tlskit")
        if peers and tk:
            fast.append(f"N = {fmt_n(c)}: {min(peers) / tk:.1f}×")
    if fast:
        L.append("\ntlskit from PEM, speed relative to the fastest peer: " + "; ".join(fast) + ".")
    gr = out.get("growth") or {}
    if any(d.get("exponents") for d in gr.values()):
        L.append("\n### Growth exponent 10,000 → 100,000, measured back to back\n")
        L.append("The columns above are measured minutes apart; the machine's speed drifts "
                 "(±15 % seen within minutes on this VM), and that drift lands in an exponent "
                 "computed from them. Here each round runs the same commands for N = 10,000 and "
                 "then N = 100,000 for every implementation that finished 100,000; the exponent "
                 "of each round is computed and the median reported.\n")
        L.append("Warm: the table's command (median of several loads in one process). First "
                 "load: one load in a fresh process, as a server meets its store at start "
                 "(tlskit through `peer-tlskit load FILE 1`, the library call the CLI makes).\n")
        L.append("| implementation | loads | rounds | median N = 10,000 | median N = 100,000 | "
                 "median exponent | per-round exponents |")
        L.append("|---|---|---|---|---|---|---|")
        for impl in IMPLS:
            d = gr.get(impl) or {}
            for pre, what in (("", "warm"), ("cold_", "first load")):
                ex = d.get(f"{pre}exponents") or []
                if not ex:
                    continue
                L.append(f"| {PEER_LABEL[impl][0]} | {what} | {len(ex)} | "
                         f"{fmt_ms(d[f'median_{pre}10k_ms'])} | {fmt_ms(d[f'median_{pre}100k_ms'])} | "
                         f"{d[f'median_{pre}exponent']:.2f} | " + ", ".join(f"{e:.2f}" for e in ex) + " |")
    L.append("\n![store load](store_load.svg)\n")

    # dir load
    dl = out["dir_load"]
    L.append("## One file at a time: a directory of N single-certificate files (median ms)\n")
    L.append("Each peer adds the files one by one through its public API (the pattern that took "
             "40 s for 206 files in one library); the directory listing is inside the timing. "
             "tlskit twice: `tlskit bench store DIR` (`load_ms`, the CLI's directory source) and "
             "the library's `StoreBuilder::add_source(Source::File)` once per file "
             "(`peer-tlskit`).\n")
    L.append("| implementation | " + " | ".join(f"N = {n:,}" for n in ns) + " | " +
             " | ".join(f"exponent {a:,}→{b:,}" for a, b in exps) + " |")
    L.append("|---" * (1 + len(ns) + len(exps)) + "|")
    per_file_api = {"openssl": "X509_STORE_load_file per file", "gnutls": "add_trust_file per file",
                    "go": "AppendCertsFromPEM per file", "rustls": "RootCertStore::add per file",
                    "tlskit": "bench store DIR (whole directory)",
                    "tlskit-lib": "StoreBuilder::add_source per file"}
    for impl in IMPLS + ["tlskit-lib"]:
        name = PEER_LABEL[impl][0]
        cells = []
        for n in ns:
            rec = dl.get(str(n), {}).get(impl)
            cells.append(cell_load(rec, impl))
            note_for(rec, f"{name} one file at a time, N = {n:,}")
            if rec and rec.get("status") == "ok" and rec.get("note"):
                notes.append(f"{name} one file at a time, N = {n:,}: {rec['note']}")
        ex = []
        for a, b in exps:
            s = slope(a, load_value(dl.get(str(a), {}).get(impl), impl),
                      b, load_value(dl.get(str(b), {}).get(impl), impl))
            ex.append(f"{s:.2f}" if s is not None else "n/a")
        L.append(f"| {name} {per_file_api[impl]} | " + " | ".join(cells) + " | " + " | ".join(ex) + " |")

    # verify
    vt = out["verify"]
    L.append("\n## Verification of leaf ← intermediate ← root against a store of N anchors "
             "(median µs per verification)\n")
    L.append("The root is the last certificate of the N-anchor bundle; host bench.example, server "
             "auth; one thread. Rows marked \"API call\" time the verification call on certificates "
             "the library has already parsed (fresh context each time); rows \"from DER\" also "
             "parse the two certificates from their DER bytes, as a TLS handshake must (rustls and "
             "tlskit take DER, so both rows are the same call).\n")
    L.append("| implementation | " + " | ".join(f"N = {n:,}" for n in ns) +
             f" | N = {max(ns):,} / N = {min(ns):,} |")
    L.append("|---" * (2 + len(ns)) + "|")

    def vrow(label, impl, field, fmt=fmt_us, ratio=True):
        cells, vals = [], []
        for n in ns:
            rec = vt.get(str(n), {}).get(impl)
            val = verify_value(rec, impl, field)
            vals.append(val)
            if rec and rec.get("status") == "timeout":
                cells.append(rec["note"])
            elif rec and rec.get("status") == "skip":
                cells.append("skipped (see notes)")
            elif val is None:
                cells.append("n/a")
            else:
                cells.append(fmt(val))
            if field == "call":
                note_for(rec, f"{PEER_LABEL[impl][0]} verification, N = {n:,}")
        r = f"{vals[-1] / vals[0]:.2f}" if ratio and vals[0] and vals[-1] else "n/a"
        L.append(f"| {label} | " + " | ".join(cells) + f" | {r} |")

    for impl in IMPLS:
        name, _, api = PEER_LABEL[impl]
        if impl in ("rustls", "tlskit"):
            vrow(f"{name} {api} (from DER)", impl, "call")
        else:
            vrow(f"{name} {api} (API call)", impl, "call")
            vrow(f"{name} {api} (from DER)", impl, "parse")
    vrow("tlskit cached verification", "tlskit", "cached")
    vrow("tlskit two threads / one thread (rate)", "tlskit", "speedup",
         fmt=lambda x: f"{x:.2f}×", ratio=False)
    L.append("\n![verification](verify.svg)")

    for key in ("serve", "serve_pq", "serve_2cpu"):
        if out.get(key):
            L.extend(serve.render(out[key]))
    if out.get("rtt"):
        L.extend(rtt.render(out["rtt"]))

    # targets
    L.append("\n## Issue targets (computed from this run)\n")
    L.extend(targets(out))

    if notes:
        L.append("\n## Notes\n")
        grouped = {}
        for n in notes:
            where, text = n.split(": ", 1)
            grouped.setdefault(text, []).append(where)
        for text, wheres in grouped.items():
            L.append(f"- {'; '.join(wheres)}: {text}")
    L.append("")
    return "\n".join(L)


def targets(out):
    ns = out["meta"]["ns"]
    sl, vt = out["store_load"], out["verify"]
    big = [n for n in ns if n >= 10000]
    lines = []

    def res(ok):
        return "n/a" if ok is None else ("met" if ok else "NOT met")

    for n in big:
        peers = [load_value(sl.get(str(n), {}).get(i), i) for i in IMPLS if i != "tlskit"]
        peers = [p for p in peers if p]
        tk = load_value(sl.get(str(n), {}).get("tlskit"), "tlskit")
        ok = (min(peers) / tk >= 2) if peers and tk else None
        detail = f"{min(peers) / tk:.1f}×" if peers and tk else "no data"
        lines.append(f"- from PEM ≥ 2× faster than the fastest peer at N = {n:,}: {res(ok)} ({detail})")
    if 10000 in ns and 100000 in ns:
        s = slope(10000, load_value(sl.get("10000", {}).get("tlskit"), "tlskit"),
                  100000, load_value(sl.get("100000", {}).get("tlskit"), "tlskit"))
        lines.append(f"- growth exponent 10,000→100,000 ≤ 1.05, from the table's columns: "
                     f"{res(None if s is None else s <= 1.05)}"
                     f" ({'n/a' if s is None else f'{s:.2f}'})")
        gt = (out.get("growth") or {}).get("tlskit") or {}
        ge = gt.get("median_exponent")
        lines.append(f"- growth exponent 10,000→100,000 ≤ 1.05, back-to-back rounds (median of "
                     f"{len(gt.get('exponents', []))}), warm: {res(None if ge is None else ge <= 1.05)}"
                     f" ({'n/a' if ge is None else f'{ge:.2f}'})")
        gc = gt.get("median_cold_exponent")
        lines.append(f"- growth exponent 10,000→100,000 ≤ 1.05, back-to-back rounds, first load in "
                     f"a fresh process: {res(None if gc is None else gc <= 1.05)}"
                     f" ({'n/a' if gc is None else f'{gc:.2f}'})")
    nmax = str(max(ns))
    snap = load_value(sl.get(nmax, {}).get("tlskit"), "tlskit", "snapshot")
    lines.append(f"- snapshot ready in ≤ 1 ms at N = {int(nmax):,}: "
                 f"{res(None if snap is None else snap <= 1)} ({fmt_ms(snap)})")
    rec = sl.get(nmax, {}).get("tlskit") or {}
    mem, der = rec.get("memory_bytes"), rec.get("der_bytes")
    lines.append(f"- memory ≤ 1.5× DER at N = {int(nmax):,}: "
                 f"{res(None if not (mem and der) else mem / der <= 1.5)}"
                 f" ({f'{mem / der:.2f}×' if mem and der else 'n/a'})")
    v0 = verify_value(vt.get(str(min(ns)), {}).get("tlskit"), "tlskit", "call")
    v1 = verify_value(vt.get(nmax, {}).get("tlskit"), "tlskit", "call")
    lines.append(f"- verification at N = {int(nmax):,} within 10% of N = {min(ns):,}: "
                 f"{res(None if not (v0 and v1) else v1 <= 1.1 * v0)}"
                 f" ({f'{v1 / v0:.2f}' if v0 and v1 else 'n/a'})")
    for n in ns:
        tk = verify_value(vt.get(str(n), {}).get("tlskit"), "tlskit", "call")
        peers = []
        for i in IMPLS[:-1]:
            for f in ("call", "parse"):
                x = verify_value(vt.get(str(n), {}).get(i), i, f)
                if x:
                    peers.append((x, i, f))
        if peers:
            best = min(peers)
            ok = None if tk is None else tk <= best[0]
            lines.append(f"- verification at N = {n:,} no slower than the fastest peer "
                         f"({best[1]} {'API call' if best[2] == 'call' and best[1] != 'rustls' else 'from DER'}, "
                         f"{fmt_us(best[0])}): {res(ok)} (tlskit {fmt_us(tk)})")
    if out.get("serve"):
        lines.extend(serve.targets(out["serve"]))
    if out.get("rtt"):
        lines.extend(rtt.targets(out["rtt"]))
    c = [verify_value(vt.get(str(n), {}).get("tlskit"), "tlskit", "cached") for n in ns]
    c = [x for x in c if x is not None]
    lines.append(f"- cached verification ≤ 2 µs: {res(None if not c else max(c) <= 2)}"
                 f" ({'n/a' if not c else 'max ' + fmt_us(max(c))})")
    s = [verify_value(vt.get(str(n), {}).get("tlskit"), "tlskit", "speedup") for n in ns]
    s = [x for x in s if x is not None]
    lines.append(f"- two threads ≥ 1.8× one thread: {res(None if not s else min(s) >= 1.8)}"
                 f" ({'n/a' if not s else 'min ' + f'{min(s):.2f}×'})")
    return lines


# ---------------------------------------------------------------- SVG
def render_svg(out):
    """Store load time against N (log-log), one line per implementation."""
    ns = out["meta"]["ns"]
    limit_ms = out["meta"]["limit_s"] * 1000
    sl = out["store_load"]
    series = []
    for impl in IMPLS:
        pts, timeouts = [], []
        for n in ns:
            rec = sl.get(str(n), {}).get(impl)
            v = load_value(rec, impl)
            if v:
                pts.append((n, v))
            elif rec and rec.get("status") == "timeout":
                timeouts.append(n)
        series.append((PEER_LABEL[impl][0] + (" (from PEM)" if impl == "tlskit" else ""), COLORS[impl], pts, timeouts))
    snap = [(n, load_value(sl.get(str(n), {}).get("tlskit"), "tlskit", "snapshot")) for n in ns]
    snap = [(n, v) for n, v in snap if v]
    series.append(("tlskit (from snapshot)", COLORS["tlskit-snapshot"], snap, []))
    return plot(ns, series, limit_ms, "Trust store load time vs number of CA certificates (log-log)",
                "N (self-signed P-256 CA certificates in one PEM bundle)",
                lambda v: f"{v:g} ms" if v < 1000 else f"{v / 1000:g} s")


def render_verify_svg(out):
    """Per-verification time against N (log-log), one line per implementation."""
    ns = out["meta"]["ns"]
    vt = out["verify"]
    series = []
    for impl, field, name, color in [
        ("openssl", "call", "OpenSSL (API call)", COLORS["openssl"]),
        ("gnutls", "call", "GnuTLS (API call)", COLORS["gnutls"]),
        ("go", "call", "Go (API call)", COLORS["go"]),
        ("rustls", "call", "rustls", COLORS["rustls"]),
        ("tlskit", "call", "tlskit", COLORS["tlskit"]),
        ("tlskit", "cached", "tlskit (cached)", COLORS["tlskit-snapshot"]),
    ]:
        pts = [(n, verify_value(vt.get(str(n), {}).get(impl), impl, field)) for n in ns]
        series.append((name, color, [(n, v) for n, v in pts if v], []))
    return plot(ns, series, None, "Time per chain verification vs trust store size (log-log)",
                "N (anchors in the store; the chain's root is the last one)",
                lambda v: f"{v:g} µs" if v < 1000 else f"{v / 1000:g} ms")


def plot(ns, series, limit_ms, title, xlabel, ylab):
    """A dependency-free log-log SVG line chart; series = (name, color, [(n, v)], [timed-out n])."""
    vals = [v for _, _, pts, _ in series for _, v in pts]
    if limit_ms and any(t for *_, t in series):
        vals.append(limit_ms)
    if not vals:
        vals = [1, 1000]
    ymin = 10 ** math.floor(math.log10(min(vals)))
    ymax = 10 ** math.ceil(math.log10(max(vals)))
    if ymax <= ymin:
        ymax = ymin * 10
    xmin = 10 ** math.floor(math.log10(min(ns)))
    xmax = 10 ** math.ceil(math.log10(max(ns)))
    if xmax <= xmin:
        xmax = xmin * 10
    W, H, ml, mr, mt, mb = 760, 480, 70, 200, 40, 50
    pw, ph = W - ml - mr, H - mt - mb

    def X(n):
        return ml + pw * (math.log10(n) - math.log10(xmin)) / (math.log10(xmax) - math.log10(xmin))

    def Y(v):
        return mt + ph - ph * (math.log10(v) - math.log10(ymin)) / (math.log10(ymax) - math.log10(ymin))

    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
         f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{ml + pw / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    e = int(round(math.log10(ymin)))
    while 10 ** e <= ymax * 1.0001:
        y = Y(10 ** e)
        s.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#ddd"/>')
        lab = ylab(10 ** e)
        s.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end">{lab}</text>')
        e += 1
    e = int(round(math.log10(xmin)))
    while 10 ** e <= xmax * 1.0001:
        x = X(10 ** e)
        s.append(f'<line x1="{x:.1f}" y1="{mt}" x2="{x:.1f}" y2="{mt + ph}" stroke="#ddd"/>')
        s.append(f'<text x="{x:.1f}" y="{mt + ph + 16}" text-anchor="middle">{10 ** e:,}</text>')
        e += 1
    for n in ns:
        x = X(n)
        s.append(f'<line x1="{x:.1f}" y1="{mt + ph}" x2="{x:.1f}" y2="{mt + ph + 4}" stroke="#555"/>')
    s.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#555"/>')
    s.append(f'<text x="{ml + pw / 2}" y="{H - 10}" text-anchor="middle">{xlabel}</text>')
    if limit_ms and any(t for *_, t in series):
        y = Y(limit_ms)
        s.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#888" '
                 f'stroke-dasharray="4 3"/>')
        s.append(f'<text x="{ml + 4}" y="{y - 4:.1f}" fill="#666">time limit {limit_ms / 1000:g} s</text>')
    for i, (name, color, pts, timeouts) in enumerate(series):
        if len(pts) > 1:
            d = " ".join(f"{X(n):.1f},{Y(v):.1f}" for n, v in pts)
            s.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
        for n, v in pts:
            s.append(f'<circle cx="{X(n):.1f}" cy="{Y(v):.1f}" r="3.5" fill="{color}">'
                     f'<title>{name}: N = {n:,}: {ylab(v)}</title></circle>')
        for n in timeouts:
            x, y = X(n), Y(limit_ms)
            if pts:
                s.append(f'<line x1="{X(pts[-1][0]):.1f}" y1="{Y(pts[-1][1]):.1f}" x2="{x:.1f}" '
                         f'y2="{y:.1f}" stroke="{color}" stroke-width="2" stroke-dasharray="5 4"/>')
            s.append(f'<path d="M{x - 6:.1f},{y + 4:.1f} L{x:.1f},{y - 8:.1f} L{x + 6:.1f},{y + 4:.1f} Z" '
                     f'fill="white" stroke="{color}" stroke-width="2"><title>{name}: N = {n:,}: '
                     f'timed out</title></path>')
        ly = mt + 10 + i * 20
        lx = ml + pw + 16
        s.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 24}" y2="{ly}" stroke="{color}" stroke-width="2"/>')
        s.append(f'<circle cx="{lx + 12}" cy="{ly}" r="3.5" fill="{color}"/>')
        s.append(f'<text x="{lx + 30}" y="{ly + 4}">{name}</text>')
    if any(t for *_, t in series):
        ly = mt + 10 + len(series) * 20 + 10
        s.append(f'<text x="{ml + pw + 16}" y="{ly}" fill="#666">△ = timed out</text>')
    s.append("</svg>\n")
    return "\n".join(s)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default="")
    p.add_argument("--out", default="")
    p.add_argument("--ns", default="", help="comma-separated N values")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--reps-max-n", type=int, default=3, help="repetitions at the largest N")
    p.add_argument("--table-rounds", type=int, default=3,
                   help="rounds of the bundle table (each cell: the median round)")
    p.add_argument("--growth-rounds", type=int, default=11,
                   help="back-to-back 10,000/100,000 rounds for the growth exponent")
    p.add_argument("--iters", type=int, default=2000, help="verifications per measurement")
    p.add_argument("--verify-budget", type=float, default=2.0, help="seconds per verify loop")
    p.add_argument("--limit", type=float, default=90.0, help="seconds per measurement")
    p.add_argument("--peer-dir", default="")
    p.add_argument("--rustls-peer", default="")
    p.add_argument("--tlskit", default="")
    p.add_argument("--tlskit-peer", default="", help="peer-tlskit binary (library API)")
    p.add_argument("--tlskit-source", default="", help="where the tlskit binary came from")
    p.add_argument("--system-bundle", default="/etc/ssl/certs/ca-certificates.crt")
    p.add_argument("--missing", action="append", default=[], help="IMPL=reason")
    p.add_argument("--command", default="bench/run.sh")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", choices=["all", "serve"], default="all",
                   help="serve: only the terminator benchmark (writes serve.md, serve.json)")
    p.add_argument("--serve-tls-load", default="", help="tls-load binary: runs bench/serve.py")
    p.add_argument("--serve-nginx", default="/usr/sbin/nginx")
    p.add_argument("--render-only", action="store_true",
                   help="re-render results.md and store_load.svg from results.json")
    a = p.parse_args()
    if a.render_only:
        a.out = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
        out = json.load(open(os.path.join(a.out, "results.json")))
        open(os.path.join(a.out, "results.md"), "w").write(render_md(out))
        open(os.path.join(a.out, "store_load.svg"), "w").write(render_svg(out))
        open(os.path.join(a.out, "verify.svg"), "w").write(render_verify_svg(out))
        return
    if a.only == "serve" and not (a.out and a.serve_tls_load and a.tlskit):
        p.error("--only serve needs --out, --tlskit and --serve-tls-load")
    if a.only != "serve" and not (a.data and a.out and a.ns and a.peer_dir and a.rustls_peer):
        p.error("--data, --out, --ns, --peer-dir and --rustls-peer are required (bench/run.sh passes them)")
    Bench(a).run()


if __name__ == "__main__":
    main()
