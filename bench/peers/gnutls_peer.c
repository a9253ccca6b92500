/* Peer program: GnuTLS 3 trust list, timed in-process (see bench/README.md).
 *
 *   gnutls_peer load FILE R BUDGET_S     gnutls_x509_trust_list_add_trust_file on a fresh
 *                                        trust list (default hash size) per run
 *   gnutls_peer loaddir DIR R BUDGET_S   add_trust_file once per file of DIR (readdir inside
 *                                        the timing)
 *   gnutls_peer verify ROOTS CHAIN ITERS BUDGET_S
 *                                        gnutls_x509_trust_list_verify_crt2 of (leaf,
 *                                        intermediate) with typed data hostname bench.example
 *                                        and key purpose TLS WWW server: median_us times
 *                                        the call on imported certificates, median_parse_us
 *                                        also the import of both DER certificates
 *   gnutls_peer version
 * Prints one JSON object on stdout. Build: cc -O2 gnutls_peer.c -lgnutls */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "common.h"

static gnutls_x509_trust_list_t load_once(const char *src, int per_file, int *anchors) {
    gnutls_x509_trust_list_t list;
    if (gnutls_x509_trust_list_init(&list, 0) < 0) { fprintf(stderr, "trust_list_init failed\n"); exit(2); }
    *anchors = 0;
    if (per_file) {
        size_t n;
        char **files = list_dir(src, &n);
        for (size_t i = 0; i < n; i++) {
            int r = gnutls_x509_trust_list_add_trust_file(list, files[i], NULL, GNUTLS_X509_FMT_PEM, 0, 0);
            if (r < 0) { fprintf(stderr, "add_trust_file %s: %s\n", files[i], gnutls_strerror(r)); exit(2); }
            *anchors += r;
        }
        free_list(files);
    } else {
        int r = gnutls_x509_trust_list_add_trust_file(list, src, NULL, GNUTLS_X509_FMT_PEM, 0, 0);
        if (r < 0) { fprintf(stderr, "add_trust_file %s: %s\n", src, gnutls_strerror(r)); exit(2); }
        *anchors = r;
    }
    return list;
}

static int do_load(const char *src, int reps, double budget, int per_file) {
    if (reps < 1) reps = 1;
    double *s = calloc((size_t)reps, sizeof *s);
    size_t n = 0;
    int anchors = 0;
    double start = now_s();
    for (int r = 0; r < reps; r++) {
        double t = now_s();
        gnutls_x509_trust_list_t list = load_once(src, per_file, &anchors);
        s[n++] = (now_s() - t) * 1e3;
        gnutls_x509_trust_list_deinit(list, 1);
        if (now_s() - start > budget) break;
    }
    printf("{\"impl\":\"gnutls\",\"op\":\"%s\",\"src\":", per_file ? "loaddir" : "load");
    json_str(src);
    printf(",\"anchors\":%d,\"median_ms\":%.4f,", anchors, median_of(s, n));
    print_samples("samples_ms", s, n);
    printf("}\n");
    free(s);
    return 0;
}

/* One verification of already imported certificates (leaf, intermediate). */
static int verify_parsed(gnutls_x509_trust_list_t list, gnutls_x509_crt_t *crts) {
    gnutls_typed_vdata_st data[2] = {
        {GNUTLS_DT_DNS_HOSTNAME, (unsigned char *)"bench.example", 0},
        {GNUTLS_DT_KEY_PURPOSE_OID, (unsigned char *)GNUTLS_KP_TLS_WWW_SERVER, 0},
    };
    unsigned int status = 0;
    int r = gnutls_x509_trust_list_verify_crt2(list, crts, 2, data, 2, 0, &status, NULL);
    int ok = r == 0 && status == 0;
    if (!ok && getenv("BENCH_DEBUG")) {
        gnutls_datum_t out;
        if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &out, 0) == 0) {
            fprintf(stderr, "verify: r=%d %s\n", r, out.data);
            gnutls_free(out.data);
        }
    }
    return ok;
}

/* The same, starting from the DER bytes a handshake receives (import of both). */
static int verify_der(gnutls_x509_trust_list_t list, gnutls_datum_t *der) {
    gnutls_x509_crt_t crts[2] = {NULL, NULL};
    int ok = 0;
    for (int i = 0; i < 2; i++) {
        if (gnutls_x509_crt_init(&crts[i]) < 0 ||
            gnutls_x509_crt_import(crts[i], &der[i], GNUTLS_X509_FMT_DER) < 0)
            goto out;
    }
    ok = verify_parsed(list, crts);
out:
    for (int i = 0; i < 2; i++)
        if (crts[i]) gnutls_x509_crt_deinit(crts[i]);
    return ok;
}

static int do_verify(const char *roots, const char *chain, int iters, double budget) {
    int anchors;
    double t = now_s();
    gnutls_x509_trust_list_t list = load_once(roots, 0, &anchors);
    double load_ms = (now_s() - t) * 1e3;

    gnutls_datum_t pem;
    if (gnutls_load_file(chain, &pem) < 0) { fprintf(stderr, "cannot read %s\n", chain); return 2; }
    gnutls_x509_crt_t *parsed = NULL;
    unsigned int count = 0;
    if (gnutls_x509_crt_list_import2(&parsed, &count, &pem, GNUTLS_X509_FMT_PEM, 0) < 0 || count < 2) {
        fprintf(stderr, "%s: expected leaf then intermediate\n", chain);
        return 2;
    }
    gnutls_datum_t der[2];
    for (int i = 0; i < 2; i++) gnutls_x509_crt_export2(parsed[i], GNUTLS_X509_FMT_DER, &der[i]);
    gnutls_free(pem.data);

    if (!verify_parsed(list, parsed) || !verify_der(list, der)) {
        fprintf(stderr, "gnutls: the benchmark chain does not verify against %s\n", roots);
        return 2;
    }
    if (iters < 1) iters = 1;
    double *s = calloc((size_t)iters, sizeof *s), *sp = calloc((size_t)iters, sizeof *sp);
    size_t n = 0, np = 0;
    int valid = 1;
    for (int i = 0; i < 5; i++) verify_parsed(list, parsed);
    double start = now_s();
    for (int i = 0; i < iters; i++) {
        double t0 = now_s();
        valid &= verify_parsed(list, parsed);
        s[n++] = (now_s() - t0) * 1e6;
        if (now_s() - start > budget && n >= 5) break;
    }
    for (int i = 0; i < 5; i++) verify_der(list, der);
    start = now_s();
    for (int i = 0; i < iters; i++) {
        double t0 = now_s();
        valid &= verify_der(list, der);
        sp[np++] = (now_s() - t0) * 1e6;
        if (now_s() - start > budget && np >= 5) break;
    }
    printf("{\"impl\":\"gnutls\",\"op\":\"verify\",\"src\":");
    json_str(roots);
    printf(",\"anchors\":%d,\"load_ms\":%.4f,\"valid\":%s,\"iterations\":%zu,\"median_us\":%.4f,"
           "\"parse_iterations\":%zu,\"median_parse_us\":%.4f,",
           anchors, load_ms, valid ? "true" : "false", n, median_of(s, n), np, median_of(sp, np));
    print_samples("samples_us", s, n);
    printf(",");
    print_samples("samples_parse_us", sp, np);
    printf("}\n");
    for (unsigned i = 0; i < count; i++) gnutls_x509_crt_deinit(parsed[i]);
    gnutls_free(parsed);
    gnutls_x509_trust_list_deinit(list, 1);
    gnutls_free(der[0].data);
    gnutls_free(der[1].data);
    free(s);
    free(sp);
    return 0;
}

int main(int argc, char **argv) {
    gnutls_global_init();
    if (argc == 2 && !strcmp(argv[1], "version")) {
        printf("{\"impl\":\"gnutls\",\"version\":");
        json_str(gnutls_check_version(NULL));
        printf("}\n");
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "load")) return do_load(argv[2], atoi(argv[3]), atof(argv[4]), 0);
    if (argc == 5 && !strcmp(argv[1], "loaddir")) return do_load(argv[2], atoi(argv[3]), atof(argv[4]), 1);
    if (argc == 6 && !strcmp(argv[1], "verify"))
        return do_verify(argv[2], argv[3], atoi(argv[4]), atof(argv[5]));
    fprintf(stderr, "usage: gnutls_peer load FILE R BUDGET_S | loaddir DIR R BUDGET_S | "
                    "verify ROOTS CHAIN ITERS BUDGET_S | version\n");
    return 2;
}
