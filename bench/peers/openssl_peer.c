/* Peer program: OpenSSL 3 X509_STORE, timed in-process (see bench/README.md).
 *
 *   openssl_peer load FILE R BUDGET_S     X509_STORE_load_file on a fresh X509_STORE per run
 *   openssl_peer loaddir DIR R BUDGET_S   X509_STORE_load_file once per file of DIR (readdir
 *                                         inside the timing), same fresh store per run
 *   openssl_peer verify ROOTS CHAIN ITERS BUDGET_S
 *                                         X509_verify_cert of leaf (+ untrusted intermediate)
 *                                         for host bench.example, purpose sslserver, a fresh
 *                                         X509_STORE_CTX per iteration: median_us times the
 *                                         call on parsed X509 objects, median_parse_us also
 *                                         d2i_X509 of both DER certificates (as a handshake)
 *   openssl_peer version
 * Prints one JSON object on stdout. Build: cc -O2 openssl_peer.c -lcrypto */
#include <openssl/err.h>
#include <openssl/opensslv.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "common.h"

static X509_STORE *load_once(const char *src, int per_file) {
    X509_STORE *st = X509_STORE_new();
    if (!st) { fprintf(stderr, "X509_STORE_new failed\n"); exit(2); }
    if (per_file) {
        size_t n;
        char **files = list_dir(src, &n);
        for (size_t i = 0; i < n; i++) {
            if (X509_STORE_load_file(st, files[i]) != 1) {
                fprintf(stderr, "X509_STORE_load_file %s failed\n", files[i]);
                ERR_print_errors_fp(stderr);
                exit(2);
            }
        }
        free_list(files);
    } else if (X509_STORE_load_file(st, src) != 1) {
        fprintf(stderr, "X509_STORE_load_file %s failed\n", src);
        ERR_print_errors_fp(stderr);
        exit(2);
    }
    return st;
}

static int count_anchors(X509_STORE *st) {
    STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(st);
    int n = 0;
    for (int i = 0; i < sk_X509_OBJECT_num(objs); i++)
        if (X509_OBJECT_get_type(sk_X509_OBJECT_value(objs, i)) == X509_LU_X509) n++;
    return n;
}

static int do_load(const char *src, int reps, double budget, int per_file) {
    double *s = calloc((size_t)(reps > 0 ? reps : 1), sizeof *s);
    size_t n = 0;
    int anchors = 0;
    double start = now_s();
    for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
        double t = now_s();
        X509_STORE *st = load_once(src, per_file);
        s[n++] = (now_s() - t) * 1e3;
        anchors = count_anchors(st);
        X509_STORE_free(st);
        if (now_s() - start > budget) break;
    }
    printf("{\"impl\":\"openssl\",\"op\":\"%s\",\"src\":", per_file ? "loaddir" : "load");
    json_str(src);
    printf(",\"anchors\":%d,\"median_ms\":%.4f,", anchors, median_of(s, n));
    print_samples("samples_ms", s, n);
    printf("}\n");
    free(s);
    return 0;
}

/* One verification of already parsed certificates: fresh X509_STORE_CTX, untrusted
 * intermediate, purpose sslserver, host bench.example. */
static int verify_parsed(X509_STORE *st, X509 *leaf, STACK_OF(X509) *untrusted) {
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int ok = 0;
    if (ctx && X509_STORE_CTX_init(ctx, st, leaf, untrusted) == 1) {
        X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
        X509_VERIFY_PARAM *param = X509_STORE_CTX_get0_param(ctx);
        X509_VERIFY_PARAM_set1_host(param, "bench.example", 0);
        ok = X509_verify_cert(ctx) == 1;
        if (!ok && getenv("BENCH_DEBUG"))
            fprintf(stderr, "verify error: %s\n",
                    X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
    }
    X509_STORE_CTX_free(ctx);
    return ok;
}

/* The same, starting from the DER bytes a handshake receives (d2i_X509 of both). */
static int verify_der(X509_STORE *st, const unsigned char *leaf_der, int leaf_len,
                      const unsigned char *inter_der, int inter_len) {
    const unsigned char *p = leaf_der;
    X509 *leaf = d2i_X509(NULL, &p, leaf_len);
    p = inter_der;
    X509 *inter = d2i_X509(NULL, &p, inter_len);
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    sk_X509_push(untrusted, inter);
    int ok = leaf && inter && verify_parsed(st, leaf, untrusted);
    sk_X509_pop_free(untrusted, X509_free);
    X509_free(leaf);
    return ok;
}

static int do_verify(const char *roots, const char *chain, int iters, double budget) {
    double t = now_s();
    X509_STORE *st = load_once(roots, 0);
    double load_ms = (now_s() - t) * 1e3;

    FILE *f = fopen(chain, "r");
    if (!f) { perror(chain); return 2; }
    X509 *leaf = PEM_read_X509(f, NULL, NULL, NULL);
    X509 *inter = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    if (!leaf || !inter) { fprintf(stderr, "%s: expected leaf then intermediate\n", chain); return 2; }
    unsigned char *leaf_der = NULL, *inter_der = NULL;
    int leaf_len = i2d_X509(leaf, &leaf_der);
    int inter_len = i2d_X509(inter, &inter_der);
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    sk_X509_push(untrusted, inter);

    if (!verify_parsed(st, leaf, untrusted) || !verify_der(st, leaf_der, leaf_len, inter_der, inter_len)) {
        fprintf(stderr, "openssl: the benchmark chain does not verify against %s\n", roots);
        return 2;
    }
    if (iters < 1) iters = 1;
    double *s = calloc((size_t)iters, sizeof *s), *sp = calloc((size_t)iters, sizeof *sp);
    size_t n = 0, np = 0;
    int valid = 1;
    for (int i = 0; i < 5; i++) verify_parsed(st, leaf, untrusted);
    double start = now_s();
    for (int i = 0; i < iters; i++) {
        double t0 = now_s();
        valid &= verify_parsed(st, leaf, untrusted);
        s[n++] = (now_s() - t0) * 1e6;
        if (now_s() - start > budget && n >= 5) break;
    }
    for (int i = 0; i < 5; i++) verify_der(st, leaf_der, leaf_len, inter_der, inter_len);
    start = now_s();
    for (int i = 0; i < iters; i++) {
        double t0 = now_s();
        valid &= verify_der(st, leaf_der, leaf_len, inter_der, inter_len);
        sp[np++] = (now_s() - t0) * 1e6;
        if (now_s() - start > budget && np >= 5) break;
    }
    printf("{\"impl\":\"openssl\",\"op\":\"verify\",\"src\":");
    json_str(roots);
    printf(",\"anchors\":%d,\"load_ms\":%.4f,\"valid\":%s,\"iterations\":%zu,\"median_us\":%.4f,"
           "\"parse_iterations\":%zu,\"median_parse_us\":%.4f,",
           count_anchors(st), load_ms, valid ? "true" : "false", n, median_of(s, n), np,
           median_of(sp, np));
    print_samples("samples_us", s, n);
    printf(",");
    print_samples("samples_parse_us", sp, np);
    printf("}\n");
    sk_X509_pop_free(untrusted, X509_free);
    X509_free(leaf);
    X509_STORE_free(st);
    OPENSSL_free(leaf_der);
    OPENSSL_free(inter_der);
    free(s);
    free(sp);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "version")) {
        printf("{\"impl\":\"openssl\",\"version\":");
        json_str(OpenSSL_version(OPENSSL_VERSION));
        printf("}\n");
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "load")) return do_load(argv[2], atoi(argv[3]), atof(argv[4]), 0);
    if (argc == 5 && !strcmp(argv[1], "loaddir")) return do_load(argv[2], atoi(argv[3]), atof(argv[4]), 1);
    if (argc == 6 && !strcmp(argv[1], "verify"))
        return do_verify(argv[2], argv[3], atoi(argv[4]), atof(argv[5]));
    fprintf(stderr, "usage: openssl_peer load FILE R BUDGET_S | loaddir DIR R BUDGET_S | "
                    "verify ROOTS CHAIN ITERS BUDGET_S | version\n");
    return 2;
}
