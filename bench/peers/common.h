/* Shared helpers for the C peer programs: monotonic clock, medians, JSON sample arrays,
 * reading a PEM chain file into DER buffers. Header-only; each peer includes it once. */
#ifndef TLSKIT_BENCH_COMMON_H
#define TLSKIT_BENCH_COMMON_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *v, size_t n) {
    if (n == 0) return 0.0;
    double *c = malloc(n * sizeof *c);
    if (!c) return 0.0;
    memcpy(c, v, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double);
    double m = (n % 2) ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2.0;
    free(c);
    return m;
}

static void print_samples(const char *key, const double *v, size_t n) {
    printf("\"%s\":[", key);
    for (size_t i = 0; i < n; i++) printf("%s%.4f", i ? "," : "", v[i]);
    printf("]");
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

/* Directory listing in readdir order (as the Rust and Go peers walk it). Returns a
 * NULL-terminated malloc'd array of "dir/name" paths of regular entries (skips dot files). */
static char **list_dir(const char *dir, size_t *count) {
    DIR *d = opendir(dir);
    if (!d) { perror(dir); exit(2); }
    size_t cap = 1024, n = 0;
    char **v = malloc(cap * sizeof *v);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n + 1 >= cap) { cap *= 2; v = realloc(v, cap * sizeof *v); }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        v[n] = malloc(len);
        snprintf(v[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    v[n] = NULL;
    *count = n;
    return v;
}

static void free_list(char **v) {
    for (size_t i = 0; v[i]; i++) free(v[i]);
    free(v);
}

#endif
