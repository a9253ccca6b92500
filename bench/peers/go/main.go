// Peer program: Go crypto/x509 (standard library only), timed in-process (see bench/README.md).
//
//	go-peer load FILE R BUDGET_S     os.ReadFile + CertPool.AppendCertsFromPEM, fresh pool per run
//	go-peer loaddir DIR R BUDGET_S   the same once per file of DIR (listing inside the timing)
//	go-peer verify ROOTS CHAIN ITERS BUDGET_S
//	                                 Certificate.Verify with DNSName bench.example and the
//	                                 intermediate in Intermediates: median_us times the call on
//	                                 parsed certificates, median_parse_us also parsing both DER
//	                                 certificates and building the intermediates pool (as
//	                                 crypto/tls does per handshake)
//	go-peer version
//
// Prints one JSON object on stdout.
package main

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"time"
)

func die(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "go-peer: "+format+"\n", a...)
	os.Exit(2)
}

func median(v []float64) float64 {
	c := append([]float64(nil), v...)
	sort.Float64s(c)
	n := len(c)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return c[n/2]
	}
	return (c[n/2-1] + c[n/2]) / 2
}

func addFile(pool *x509.CertPool, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		die("%v", err)
	}
	if !pool.AppendCertsFromPEM(b) {
		die("%s: no certificate appended", path)
	}
}

func loadOnce(src string, perFile bool) *x509.CertPool {
	pool := x509.NewCertPool()
	if perFile {
		entries, err := os.ReadDir(src)
		if err != nil {
			die("%v", err)
		}
		for _, e := range entries {
			addFile(pool, filepath.Join(src, e.Name()))
		}
	} else {
		addFile(pool, src)
	}
	return pool
}

func emit(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		die("%v", err)
	}
	fmt.Println(string(b))
}

func load(src string, reps int, budget float64, perFile bool) {
	if reps < 1 {
		reps = 1
	}
	var samples []float64
	anchors := 0
	start := time.Now()
	for r := 0; r < reps; r++ {
		t := time.Now()
		pool := loadOnce(src, perFile)
		samples = append(samples, float64(time.Since(t).Nanoseconds())/1e6)
		//lint:ignore SA1019 Subjects is the only way to count a pool's certificates
		anchors = len(pool.Subjects())
		pool = nil
		runtime.GC()
		if time.Since(start).Seconds() > budget {
			break
		}
	}
	op := "load"
	if perFile {
		op = "loaddir"
	}
	emit(map[string]any{"impl": "go", "op": op, "src": src, "anchors": anchors,
		"median_ms": median(samples), "samples_ms": samples})
}

func verify(roots, chain string, iters int, budget float64) {
	t := time.Now()
	pool := loadOnce(roots, false)
	loadMs := float64(time.Since(t).Nanoseconds()) / 1e6
	b, err := os.ReadFile(chain)
	if err != nil {
		die("%v", err)
	}
	var ders [][]byte
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		ders = append(ders, blk.Bytes)
	}
	if len(ders) < 2 {
		die("%s: expected leaf then intermediate", chain)
	}
	check := func(leaf *x509.Certificate, inters *x509.CertPool) bool {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: "bench.example", Intermediates: inters,
			Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		if err != nil && os.Getenv("BENCH_DEBUG") != "" {
			fmt.Fprintln(os.Stderr, err)
		}
		return err == nil
	}
	// From DER, as crypto/tls does per handshake: parse both, build the intermediates pool.
	fromDer := func() bool {
		leaf, err := x509.ParseCertificate(ders[0])
		if err != nil {
			return false
		}
		inter, err := x509.ParseCertificate(ders[1])
		if err != nil {
			return false
		}
		inters := x509.NewCertPool()
		inters.AddCert(inter)
		return check(leaf, inters)
	}
	leaf, err1 := x509.ParseCertificate(ders[0])
	inter, err2 := x509.ParseCertificate(ders[1])
	if err1 != nil || err2 != nil {
		die("%s: cannot parse the chain", chain)
	}
	inters := x509.NewCertPool()
	inters.AddCert(inter)
	parsed := func() bool { return check(leaf, inters) }
	if !parsed() || !fromDer() {
		die("the benchmark chain does not verify against %s", roots)
	}
	if iters < 1 {
		iters = 1
	}
	valid := true
	timeLoop := func(f func() bool) []float64 {
		for i := 0; i < 5; i++ {
			f()
		}
		samples := make([]float64, 0, iters)
		start := time.Now()
		for i := 0; i < iters; i++ {
			t0 := time.Now()
			valid = f() && valid
			samples = append(samples, float64(time.Since(t0).Nanoseconds())/1e3)
			if time.Since(start).Seconds() > budget && len(samples) >= 5 {
				break
			}
		}
		return samples
	}
	samples := timeLoop(parsed)
	samplesParse := timeLoop(fromDer)
	//lint:ignore SA1019 Subjects is the only way to count a pool's certificates
	anchors := len(pool.Subjects())
	emit(map[string]any{"impl": "go", "op": "verify", "src": roots, "anchors": anchors,
		"load_ms": loadMs, "valid": valid, "iterations": len(samples),
		"median_us": median(samples), "samples_us": samples,
		"parse_iterations": len(samplesParse), "median_parse_us": median(samplesParse),
		"samples_parse_us": samplesParse})
}

func main() {
	a := os.Args
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			die("bad number %q", s)
		}
		return v
	}
	switch {
	case len(a) == 2 && a[1] == "version":
		emit(map[string]any{"impl": "go", "version": runtime.Version()})
	case len(a) == 5 && a[1] == "load":
		load(a[2], int(num(a[3])), num(a[4]), false)
	case len(a) == 5 && a[1] == "loaddir":
		load(a[2], int(num(a[3])), num(a[4]), true)
	case len(a) == 6 && a[1] == "verify":
		verify(a[2], a[3], int(num(a[4])), num(a[5]))
	default:
		die("usage: go-peer load FILE R BUDGET_S | loaddir DIR R BUDGET_S | verify ROOTS CHAIN ITERS BUDGET_S | version")
	}
}
