/* mlgo-policy-host: compile with an MLGO policy (inlining, or regalloc eviction) and distribution clang, no Python,
   no onnxruntime.

   Build (the clang you already have, nothing else):  clang -O2 -o mlgo-policy-host mlgo-policy-host.c -lm
   Use:   make CC="$PWD/mlgo-policy-host --weights $PWD/model.weights --vocab $PWD/vocab.json -- clang-22" CFLAGS=-Oz
   Test:  mlgo-policy-host --weights model.weights --decide [--logits] < stream > advice

   Why: the Python standalone host (mlgo-cc.py) starts an interpreter and onnxruntime for every compile, which
   cost a -Oz build 1.84x plain clang; this one starts in about a millisecond. Per compile it makes a private
   FIFO pair, adds LLVM's interactive flags of the advisor the weights answer (a network of two logits: the
   inliner; of one score: the eviction advisor, which scores every candidate and evicts the best the mask allows),
   starts the compiler in a session of its own and answers
   its channel (the wire format of mlgo-farm's policyhost/protocol.py) with the network of a weights file
   (magic MLGOPOLW, format version 1, written by mlgo-farm's policytrain/native_export.py and described
   in its docs/policies.md) until the compiler exits.

   Same decisions as onnxruntime, bit for bit: each step is the float32 operation the ONNX graph's node does
   in onnxruntime's CPU build, in its order. `Log` is Eigen's vectorised logarithm on whole packets of 4 and
   the C library's logf on the remaining tail, multiply and add rounded apart (so floating-point contraction
   is turned off below); `Gemm` fuses each product into its sum one k at a time (MLAS's FMA kernels, on every
   x86-64 CPU since 2013) in chunks of 256 inputs, each chunk's sum added to the bias and the chunks before.

   Nothing waits forever: a compiler silent and idle for --timeout seconds, or silent for --max-silence
   seconds on an opened channel, or that reads no advice for --timeout seconds, is killed with its process
   group, as it is on SIGTERM, SIGINT or SIGHUP, which wake every wait (a pipe the handler writes to is in
   every poll). Nothing grows without bound: a line longer than MAX_LINE bytes, an observation larger than
   MAX_OBS, a weights file that is not a regular file or is larger than MAX_WEIGHTS are refused in one line.
   Every failure is one line on stderr and a non-zero exit (2: bad input, weights or features). */
#define _GNU_SOURCE
#pragma STDC FP_CONTRACT OFF
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VERSION "1"
#define MAGIC "MLGOPOLW"
#define FORMAT 1
#define MAXF 512
#define MAXL 8
#define GEMM_STRIDE_K 256 /* MLAS sums a packed B's rows in chunks of this many */
#define MAX_LINE (1 << 20)  /* a header, context or observation line (LLVM's headers are a few kilobytes) */
#define MAX_OBS (1 << 26)   /* one observation's raw tensors */
#define MAX_WEIGHTS (1LL << 30) /* eight layers of the largest tensor the format allows are 512 MiB */

static const char *prog = "mlgo-policy-host";
static char tmpdir[4096];
static pid_t child = -1;
static volatile sig_atomic_t got_signal;
static int sig_pipe[2] = {-1, -1}; /* the handler writes a byte: a poll on [0] wakes on a signal, race-free */
static double io_timeout = 60;     /* --timeout: the longest wait for the compiler to take an advice */

static void cleanup(void) {
    if (child > 0) { kill(-child, SIGKILL); kill(child, SIGKILL); waitpid(child, NULL, 0); child = -1; }
    if (tmpdir[0]) {
        char p[4200];
        snprintf(p, sizeof p, "%s/channel.in", tmpdir); unlink(p);
        snprintf(p, sizeof p, "%s/channel.out", tmpdir); unlink(p);
        rmdir(tmpdir); tmpdir[0] = 0;
    }
}

static void die(int code, const char *fmt, ...) {
    va_list ap; va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", prog); vfprintf(stderr, fmt, ap); fputc('\n', stderr);
    va_end(ap); cleanup(); exit(code);
}

static long long decisions;
static void on_signal(int sig) {
    int e = errno; got_signal = sig;
    if (sig_pipe[1] >= 0) { ssize_t w = write(sig_pipe[1], "", 1); (void)w; }
    errno = e;
}
static void signalled(void) { /* on a signal: the compiler's group killed, the channel removed, exit 128 + it */
    if (!got_signal) return;
    int s = got_signal; cleanup();
    fprintf(stderr, "%s: %s\n", prog, s == SIGHUP ? "hung up" : s == SIGINT ? "interrupted" : "terminated");
    exit(128 + s);
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
/* Wait at most `limit` seconds for `fd` to be ready for `events` (or to fail: the read or write then says how);
   0 on the deadline. A signal ends the process here, however long the wait. */
static int wait_for(int fd, short events, double limit) {
    for (double end = now() + limit;;) {
        signalled();
        double left = end - now();
        if (left <= 0) return 0;
        struct pollfd pf[2] = {{fd, events, 0}, {sig_pipe[0], POLLIN, 0}};
        int r = poll(pf, 2, left * 1000 >= INT_MAX ? INT_MAX : (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR) die(1, "poll: %s", strerror(errno));
        if (r > 0 && pf[0].revents) return 1;
    }
}

/* -- the weights file ------------------------------------------------------------------------------- */
typedef struct { char name[128]; uint32_t width, dtype, offset; } Feature;
typedef struct { uint32_t in, out; float *w, *b; } Layer;
typedef struct { float side, limit, keeps, push[2]; } Limit;
static struct {
    uint32_t nf, nl, width, nlim, has_lean, cost_at, threshold_at, default_at;
    int evict; /* a one-output scorer: regalloc eviction, each candidate scored, the best the mask allows evicted */
    Feature f[MAXF]; float *mean, *std; Layer l[MAXL]; float no[2], slope[2]; Limit lim[4];
} W;
static const unsigned char *wp, *we; static const char *wpath;

static void need(size_t n) { if ((size_t)(we - wp) < n) die(2, "weights file %s is truncated", wpath); }
static uint32_t u32(void) { uint32_t v; need(4); memcpy(&v, wp, 4); wp += 4; return v; }
static void *alloc(size_t n) { void *p = malloc(n ? n : 1); if (!p) die(1, "out of memory (%zu bytes)", n); return p; }
static float *f32s(size_t n) {
    if (n > (1u << 24)) die(2, "weights file %s: implausible size", wpath);
    need(4 * n); float *v = alloc(4 * n); memcpy(v, wp, 4 * n); wp += 4 * n; return v;
}
static uint32_t find_feature(const char *name) {
    for (uint32_t i = 0, at = 0; i < W.nf; at += W.f[i].width, i++) if (!strcmp(W.f[i].name, name)) return at;
    return UINT32_MAX;
}

static void load_weights(const char *path) {
    struct stat st; wpath = path;
    if (stat(path, &st)) die(2, "weights file %s: %s", path, strerror(errno));
    /* before opening: /dev/zero never ends, a FIFO blocks until someone writes */
    if (!S_ISREG(st.st_mode)) die(2, "weights file %s is not a regular file", path);
    if (st.st_size > MAX_WEIGHTS) die(2, "weights file %s: %lld bytes, more than this host takes", path, (long long)st.st_size);
    FILE *fp = fopen(path, "rb");
    if (!fp) die(2, "weights file %s: %s", path, strerror(errno));
    size_t cap = (size_t)st.st_size + 1, n = 0, got; /* + 1: a file that grew since is read no further */
    unsigned char *data = alloc(cap);
    while (n < cap && (got = fread(data + n, 1, cap - n, fp)) > 0) n += got;
    fclose(fp); wp = data; we = data + n;
    if (n < 12 || memcmp(data, MAGIC, 8)) die(2, "%s is not an MLGO policy weights file", path);
    wp += 8;
    uint32_t version = u32();
    if (version != FORMAT)
        die(2, "weights file %s has format version %u; this host reads version %d", path, version, FORMAT);
    W.nf = u32(); W.nl = u32(); W.has_lean = u32(); W.nlim = u32();
    if (!W.nf || W.nf > MAXF || !W.nl || W.nl > MAXL || W.nlim > 4 || W.has_lean > 1)
        die(2, "weights file %s: bad counts", path);
    for (uint32_t i = 0; i < W.nf; i++) {
        Feature *f = &W.f[i]; uint32_t len = u32();
        if (len == 0 || len >= sizeof f->name) die(2, "weights file %s: bad feature name", path);
        need(len); memcpy(f->name, wp, len); f->name[len] = 0; wp += len;
        f->width = u32(); f->dtype = u32(); f->offset = W.width;
        if (!f->width || f->width > 65536 || f->dtype > 1) die(2, "weights file %s: bad feature %s", path, f->name);
        W.width += f->width;
    }
    if (W.width > 65536) die(2, "weights file %s: %u inputs, more than this host takes", path, W.width);
    W.mean = f32s(W.width); W.std = f32s(W.width);
    uint32_t in = W.width;
    for (uint32_t i = 0; i < W.nl; i++) {
        Layer *l = &W.l[i]; l->in = u32(); l->out = u32();
        if (l->in != in || !l->out || l->out > 65536) die(2, "weights file %s: layer %u has bad dimensions", path, i);
        l->w = f32s((size_t)l->in * l->out); l->b = f32s(l->out); in = l->out;
    }
    if (in != 2 && in != 1) die(2, "weights file %s: the last layer gives %u values, not two logits or one score", path, in);
    W.evict = in == 1;
    if (W.has_lean) { float *v = f32s(4); memcpy(W.no, v, 8); memcpy(W.slope, v + 2, 8); free(v); }
    for (uint32_t i = 0; i < W.nlim; i++) { float *v = f32s(5); memcpy(&W.lim[i], v, 20); free(v); }
    need(4); if (memcmp(wp, "END1", 4) || wp + 4 != we) die(2, "weights file %s: bad trailer", path);
    W.default_at = find_feature("inlining_default"); W.cost_at = find_feature("cost_estimate");
    W.threshold_at = find_feature("threshold");
    if (W.evict && (W.has_lean || W.nlim)) die(2, "weights file %s: an eviction scorer has no lean or limits", path);
    if ((W.has_lean && W.default_at == UINT32_MAX) ||
        (W.nlim && (W.default_at == UINT32_MAX || W.cost_at == UINT32_MAX || W.threshold_at == UINT32_MAX)))
        die(2, "weights file %s: a lean or limit without its features", path);
}

/* -- the network, as onnxruntime computes the ONNX graph ------------------------------------------- */
static float eigen_logf(float x0) { /* Eigen's plog_impl_float (its packet path), for x0 >= 1 and finite */
    uint32_t u; memcpy(&u, &x0, 4);
    float e = (float)((int)((u >> 23) & 0xff) - 126), x;
    u = (u & 0x807fffffu) | 0x3f000000u; memcpy(&x, &u, 4);
    int m = x < 0.707106781186547524f; float tmp = m ? x : 0.0f;
    x = x - 1.0f; e = e - (m ? 1.0f : 0.0f); x = x + tmp;
    float p = 0.18256296349849254f; p = p * x + 1.0000000190281063f; p = p * x + 1.0000000190281136f; p = x * p;
    float q = 0.049616247954120038f; q = q * x + 0.59923249590823520f; q = q * x + 1.4999999999999927f;
    q = q * x + 1.0f;
    x = p / q;
    return e * 0.693147180559945309417f + x;
}
static float packet_logf(float v) { return (isfinite(v) && v >= 1.0f) ? eigen_logf(v) : logf(v); }

static float in[65536], h[2][65536];

/* `in`: every feature as float, side by side (the graph's Cast and Concat); the network's outputs into z (two
   logits, or an eviction candidate's score). `at` and `total`: where this row starts in the tensor the graph's Log
   runs on and that tensor's size, since Eigen takes whole packets of 4 of the flattened tensor (an eviction
   decision's 33 rows are one tensor). */
static void forward(float *z, uint32_t at, uint32_t total) {
    uint32_t n = W.width, packets = total - total % 4;
    float *x = h[0];
    for (uint32_t i = 0; i < n; i++) {
        float ax1 = fabsf(in[i]) + 1.0f, lx = at + i < packets ? packet_logf(ax1) : logf(ax1);
        float sx = in[i] > 0 ? 1.0f : in[i] < 0 ? -1.0f : in[i] == 0 ? 0.0f : in[i];
        x[i] = (sx * lx - W.mean[i]) / W.std[i];
    }
    int cur = 0;
    for (uint32_t li = 0; li < W.nl; li++) {
        Layer *l = &W.l[li]; float *a = h[cur], *y = h[1 - cur];
        for (uint32_t o = 0; o < l->out; o++) {
            float c = l->b[o];
            for (uint32_t k0 = 0; k0 < l->in; k0 += GEMM_STRIDE_K) { /* MLAS: C += the chunk's fused sum */
                float acc = 0.0f;
                for (uint32_t k = k0; k < l->in && k < k0 + GEMM_STRIDE_K; k++)
                    acc = fmaf(a[k], l->w[(size_t)k * l->out + o], acc);
                c = acc + c;
            }
            y[o] = (li + 1 < W.nl && c < 0) ? 0.0f : c;
        }
        cur = 1 - cur;
    }
    z[0] = h[cur][0];
    if (W.evict) return;
    z[1] = h[cur][1];
    if (W.has_lean) {
        float d = in[W.default_at];
        for (int j = 0; j < 2; j++) { float ds = d * W.slope[j]; z[j] = (z[j] + ds) + W.no[j]; }
    }
    if (W.nlim) {
        float gap = in[W.cost_at] - in[W.threshold_at];
        for (uint32_t i = 0; i < W.nlim; i++) {
            Limit *L = &W.lim[i];
            float at = (gap * L->side > L->limit && in[W.default_at] == L->keeps) ? 1.0f : 0.0f;
            for (int j = 0; j < 2; j++) z[j] = z[j] + at * L->push[j];
        }
    }
}

/* -- the wire format: a small JSON reader for the header --------------------------------------------- */
enum { T_INT64, T_INT32, T_INT16, T_INT8, T_UINT64, T_UINT32, T_UINT16, T_UINT8, T_FLOAT, T_DOUBLE };
static const char *type_names[] = {"int64_t", "int32_t", "int16_t", "int8_t", "uint64_t", "uint32_t",
                                   "uint16_t", "uint8_t", "float", "double"};
static const int type_sizes[] = {8, 4, 2, 1, 8, 4, 2, 1, 4, 8};
typedef struct { char name[128]; int type; uint64_t count, offset; } Spec;
static Spec specs[MAXF]; static int nspecs; static Spec advice; static uint64_t obs_size;
static int bound_at[MAXF], bound; /* weights feature -> header spec; whether bound to this header */
static int mask_at = -1;             /* eviction: the header's `mask` spec */

static const char *js; static const char *hdr_err;
static void ws(void) { while (*js == ' ' || *js == '\t' || *js == '\r') js++; }
static int lit(char c) { ws(); if (*js != c) return 0; js++; return 1; }
static int jstring(char *out, size_t cap) {
    size_t n = 0; if (!lit('"')) return 0;
    while (*js && *js != '"') {
        char c = *js++;
        if (c == '\\') { c = *js++; if (!c) return 0; if (c == 'u') { for (int i = 0; i < 4; i++) if (!*js++) return 0; c = '?'; } }
        if (n + 1 < cap) out[n++] = c;
    }
    if (*js != '"') return 0;
    js++; out[n] = 0; return 1;
}
static int skip_value(void) {
    char tmp[8]; ws();
    if (*js == '"') return jstring(tmp, sizeof tmp);
    if (*js == '{' || *js == '[') {
        char close = *js == '{' ? '}' : ']'; js++;
        if (lit(close)) return 1;
        do { if (close == '}' && (!jstring(tmp, sizeof tmp) || !lit(':'))) return 0; if (!skip_value()) return 0; } while (lit(','));
        return lit(close);
    }
    const char *s = js; while (*js && !strchr(",]} \t\r", *js)) js++;
    return js > s;
}
static int jspec(Spec *s) {
    char key[32], type[32] = ""; int have_shape = 0; s->name[0] = 0; s->count = 1;
    if (!lit('{')) return 0;
    if (lit('}')) return 0;
    do {
        if (!jstring(key, sizeof key) || !lit(':')) return 0;
        if (!strcmp(key, "name")) { if (!jstring(s->name, sizeof s->name)) return 0; }
        else if (!strcmp(key, "type")) { if (!jstring(type, sizeof type)) return 0; }
        else if (!strcmp(key, "shape")) {
            have_shape = 1; if (!lit('[')) return 0;
            if (!lit(']')) { do { ws(); char *e; long long d = strtoll(js, &e, 10); if (e == js || d < 0) return 0; js = e; s->count *= (uint64_t)d; } while (lit(',')); if (!lit(']')) return 0; }
        } else if (!skip_value()) return 0;
    } while (lit(','));
    if (!lit('}') || !s->name[0] || !have_shape || s->count > (1u << 24)) return 0;
    for (s->type = 0; s->type < 10; s->type++) if (!strcmp(type, type_names[s->type])) return 1;
    hdr_err = "unsupported element type"; return 0;
}
static void parse_header(const char *line) {
    char key[32]; js = line; nspecs = 0; obs_size = 0; advice.name[0] = 0; hdr_err = NULL;
    int ok = lit('{');
    while (ok) {
        if (!jstring(key, sizeof key) || !lit(':')) { ok = 0; break; }
        if (!strcmp(key, "features")) {
            if (!lit('[')) { ok = 0; break; }
            if (!lit(']')) {
                do {
                    if (nspecs == MAXF || !jspec(&specs[nspecs])) { ok = 0; break; }
                    specs[nspecs].offset = obs_size; obs_size += specs[nspecs].count * type_sizes[specs[nspecs].type];
                    nspecs++;
                } while (lit(','));
                if (ok && !lit(']')) ok = 0;
            }
        } else if (!strcmp(key, "advice")) { if (!jspec(&advice)) ok = 0; }
        else if (!skip_value()) ok = 0;
        if (!ok || !lit(',')) break;
    }
    if (!ok || !lit('}')) die(1, "protocol: bad header%s%s", hdr_err ? ": " : "", hdr_err ? hdr_err : "");
    if (obs_size > MAX_OBS) die(1, "protocol: observations of %llu bytes, more than this host takes", (unsigned long long)obs_size);
    if (!advice.name[0]) die(1, "protocol: the header has no 'advice' spec");
    bound = 0;
}

/* The weights' features in this session's header, checked at its first observation (a session that asks nothing
   needs none): each one sent, with the width the weights take. */
static void bind(void) {
    const char *wants = W.evict ? "index_to_evict" : "inlining_decision";
    if (strcmp(advice.name, wants) || advice.count != 1 || advice.type >= T_FLOAT)
        die(2, "these weights answer %s, not %s", W.evict ? "regalloc evictions" : "inlining decisions", advice.name);
    mask_at = -1;
    for (int j = 0; j < nspecs; j++) if (!strcmp(specs[j].name, "mask")) mask_at = j;
    if (W.evict && mask_at < 0) die(2, "the compiler sends no 'mask': it is not asking for evictions");
    for (uint32_t i = 0; i < W.nf; i++) {
        bound_at[i] = -1;
        for (int j = 0; j < nspecs; j++) if (!strcmp(specs[j].name, W.f[i].name)) bound_at[i] = j;
        if (bound_at[i] < 0)
            die(2, "the policy needs feature '%s', which the compiler does not send%s", W.f[i].name,
                strstr(W.f[i].name, "_embedding") ? " (pass the IR2Vec vocabulary with --vocab)" : "");
        uint64_t sent = specs[bound_at[i]].count; /* eviction: one value per candidate, or one per decision */
        if (W.evict ? (W.f[i].width != 1 || (sent != 1 && sent != specs[mask_at].count)) : sent != W.f[i].width)
            die(2, "feature '%s': the compiler sends %llu values, the weights take %u", W.f[i].name,
                (unsigned long long)sent, W.f[i].width);
    }
    bound = 1;
}

static float as_float(const unsigned char *p, int type, uint32_t dtype) { /* host's astype, then the Cast */
    union { int64_t i64; int32_t i32; int16_t i16; int8_t i8; uint64_t u64; uint32_t u32; uint16_t u16; uint8_t u8; float f; double d; } v;
    memcpy(&v, p, type_sizes[type]);
    if (dtype == 1) { /* a float32 input */
        switch (type) { case T_FLOAT: return v.f; case T_DOUBLE: return (float)v.d; default: break; }
    }
    switch (type) {
        case T_INT64: return (float)v.i64; case T_INT32: return (float)v.i32; case T_INT16: return (float)v.i16;
        case T_INT8: return (float)v.i8; case T_UINT64: return (float)(int64_t)v.u64; case T_UINT32: return (float)v.u32;
        case T_UINT16: return (float)v.u16; case T_UINT8: return (float)v.u8;
        case T_FLOAT: return (float)(int64_t)v.f; default: return (float)(int64_t)v.d;
    }
}

static int print_logits;
static float scores[4096];
/* Eviction: every candidate's row scored (a per-decision scalar repeated on each row; NaN as 0 and the rest clipped
   to +-1e30, as the graph's Where and Clip), the highest the mask allows chosen (the first of equal ones); its
   index, or (for tests) the scores. */
static size_t evict(const unsigned char *raw, long long index, unsigned char *out) {
    Spec *m = &specs[mask_at]; uint64_t rows = m->count;
    if (rows > sizeof scores / sizeof *scores) die(1, "protocol: %llu candidates, more than this host takes", (unsigned long long)rows);
    int64_t best = -1;
    for (uint64_t r = 0; r < rows; r++) {
        for (uint32_t i = 0; i < W.nf; i++) {
            Spec *s = &specs[bound_at[i]]; uint64_t k = s->count == 1 ? 0 : r;
            float v = as_float(raw + s->offset + k * type_sizes[s->type], s->type, W.f[i].dtype);
            in[W.f[i].offset] = isnan(v) ? 0.0f : v < -1e30f ? -1e30f : v > 1e30f ? 1e30f : v;
        }
        forward(&scores[r], (uint32_t)(r * W.width), (uint32_t)(rows * W.width));
        if (as_float(raw + m->offset + r * type_sizes[m->type], m->type, 0) != 0.0f && !print_logits) {
            if (!isfinite(scores[r])) die(2, "the policy gave a non-finite score on observation %lld", index);
            if (best < 0 || scores[r] > scores[best]) best = (int64_t)r;
        }
    }
    if (print_logits) { memcpy(out, scores, 4 * rows); return 4 * rows; }
    if (best < 0) die(2, "observation %lld: the mask allows no candidate", index);
    memcpy(out, &best, type_sizes[advice.type]);
    return type_sizes[advice.type];
}

/* One observation's raw bytes -> the advice bytes (or, for tests, the two logits) written to wfd. */
static void answer(int wfd, const unsigned char *raw, long long index) {
    if (!bound) bind();
    static unsigned char out[4 * sizeof scores / sizeof *scores]; size_t n;
    if (W.evict) n = evict(raw, index, out);
    else {
        for (uint32_t i = 0; i < W.nf; i++) {
            Spec *s = &specs[bound_at[i]]; int sz = type_sizes[s->type];
            for (uint32_t k = 0; k < W.f[i].width; k++) in[W.f[i].offset + k] = as_float(raw + s->offset + (uint64_t)k * sz, s->type, W.f[i].dtype);
        }
        float z[2]; forward(z, 0, W.width);
        if (print_logits) { memcpy(out, z, 8); n = 8; }
        else {
            if (!isfinite(z[0]) || !isfinite(z[1])) die(2, "the policy gave non-finite advice on observation %lld", index);
            int64_t d = z[1] > z[0]; n = type_sizes[advice.type]; memcpy(out, &d, n); /* little-endian */
        }
    }
    /* The channel is non-blocking: write first (a pipe whose last page has room takes the advice even when poll
       says it is full), wait only when it refuses. stdout (--decide) may block: wait until poll says it can take it. */
    int fl = fcntl(wfd, F_GETFL), blocking = fl < 0 || !(fl & O_NONBLOCK);
    for (size_t done = 0; done < n;) {
        ssize_t w = blocking && !wait_for(wfd, POLLOUT, io_timeout) ? -2 : write(wfd, out + done, n - done);
        if (w == -1 && errno == EAGAIN && wait_for(wfd, POLLOUT, io_timeout)) continue;
        if (w == -2 || (w == -1 && errno == EAGAIN)) {
            if (child > 0) die(1, "the compiler (pid %d) read no advice for %gs (--timeout) after %lld decisions; killed it", child, io_timeout, decisions);
            die(1, "the advice was not read for %gs (--timeout)", io_timeout);
        }
        if (w == -1 && errno == EINTR) { signalled(); continue; }
        if (w <= 0) die(1, "cannot answer the compiler: %s", strerror(errno));
        done += w;
    }
}

/* -- the decoder: header, context and observation lines, raw tensors -------------------------------- */
static unsigned char *buf; static size_t blen, bcap;

static void feed(int wfd, const unsigned char *data, size_t n) {
    if (blen + n + 1 > bcap) {
        while (blen + n + 1 > bcap) bcap = bcap ? 2 * bcap : 1 << 16;
        unsigned char *grown = realloc(buf, bcap);
        if (!grown) die(1, "out of memory (%zu bytes of the compiler's stream)", bcap);
        buf = grown;
    }
    memcpy(buf + blen, data, n); blen += n;
    size_t pos = 0; static int have_header;
    for (;;) {
        unsigned char *nl = memchr(buf + pos, '\n', blen - pos);
        if (!nl) {
            if (blen - pos > MAX_LINE) die(1, "protocol: a line of more than %d bytes without a newline", MAX_LINE);
            break;
        }
        size_t len = nl - (buf + pos); char *line = (char *)buf + pos;
        if (!have_header || (len >= 12 && !memcmp(line, "{\"features\"", 11))) {
            *nl = 0; parse_header(line); *nl = '\n'; have_header = 1; pos += len + 1; continue;
        }
        *nl = 0; js = line; char key[32]; int ok = lit('{') && jstring(key, sizeof key) && lit(':');
        if (ok && !strcmp(key, "context")) { *nl = '\n'; pos += len + 1; continue; }
        long long index = 0; char *e = NULL;
        if (ok && !strcmp(key, "observation")) { ws(); index = strtoll(js, &e, 10); js = e; }
        ok = ok && e && e > line && lit('}') && (ws(), *js == 0);
        *nl = '\n';
        if (!ok) die(1, "protocol: expected an observation or context line, got %.60s", line);
        if (blen - pos < len + 1 + obs_size + 1) break;
        const unsigned char *raw = buf + pos + len + 1;
        if (raw[obs_size] != '\n') die(1, "protocol: observation %lld is not followed by a newline", index);
        answer(wfd, raw, index); decisions++;
        pos += len + 1 + obs_size + 1;
    }
    memmove(buf, buf + pos, blen - pos); blen -= pos;
}

/* -- the launcher ------------------------------------------------------------------------------------ */

static long long tree_cpu(pid_t pid) { /* clock ticks used by pid and its live descendants */
    long long total = 0; pid_t stack[256]; int sp = 0; stack[sp++] = pid;
    while (sp) {
        pid_t p = stack[--sp]; char path[96], b[1024]; FILE *f;
        snprintf(path, sizeof path, "/proc/%d/stat", p);
        if ((f = fopen(path, "r"))) {
            size_t n = fread(b, 1, sizeof b - 1, f); b[n] = 0; fclose(f);
            char *r = strrchr(b, ')'); unsigned long long ut, st;
            if (r && sscanf(r + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2) total += ut + st;
        }
        snprintf(path, sizeof path, "/proc/%d/task/%d/children", p, p);
        if ((f = fopen(path, "r"))) { int c; while (sp < 256 && fscanf(f, "%d", &c) == 1) stack[sp++] = c; fclose(f); }
    }
    return total;
}

static int compiles_source(char **args, int n) {
    static const char *suffixes[] = {".c", ".cc", ".cpp", ".cxx", ".c++", ".C", ".m", ".mm", ".i", ".ii", ".bc", ".ll", 0};
    int has_x = 0;
    for (int i = 0; i < n; i++) if (!strcmp(args[i], "-x")) has_x = 1;
    for (int i = 0; i < n; i++) {
        const char *a = args[i];
        if (!strcmp(a, "-o") || !strcmp(a, "-MF") || !strcmp(a, "-MT") || !strcmp(a, "-MQ")) { i++; continue; }
        if (!strcmp(a, "-") && has_x) return 1;
        const char *dot = strrchr(a, '.');
        if (a[0] != '-' && dot && !strchr(dot, '/')) for (int k = 0; suffixes[k]; k++) if (!strcmp(dot, suffixes[k])) return 1;
    }
    return 0;
}

static double seconds(const char *text, const char *what) {
    char *e; double v = strtod(text, &e);
    if (e == text || *e || !(v > 0) || isinf(v)) die(2, "%s must be a positive number of seconds, not '%s'", what, text);
    return v;
}

static int run(char **cmd, int ncmd, const char *vocab, double timeout, double silence) {
    if (!compiles_source(cmd + 1, ncmd - 1)) { execvp(cmd[0], cmd); die(127, "cannot run %s: %s", cmd[0], strerror(errno)); }
    const char *t = getenv("TMPDIR"); snprintf(tmpdir, sizeof tmpdir, "%s/mlgo-host-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir)) { tmpdir[0] = 0; die(1, "cannot make a private directory: %s", strerror(errno)); }
    char base[4200], pin[4300], pout[4300]; snprintf(base, sizeof base, "%s/channel", tmpdir);
    snprintf(pin, sizeof pin, "%s.in", base); snprintf(pout, sizeof pout, "%s.out", base);
    if (mkfifo(pin, 0600) || mkfifo(pout, 0600)) die(1, "cannot make the channel: %s", strerror(errno));
    int wfd = open(pin, O_RDWR | O_NONBLOCK | O_CLOEXEC), rfd = open(pout, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (wfd < 0 || rfd < 0) die(1, "cannot open the channel: %s", strerror(errno));
    char **argv = calloc(ncmd + 16, sizeof *argv); int n = 0; /* zeroed: the NULL that ends it */
    if (!argv) die(1, "out of memory");
    for (int i = 0; i < ncmd; i++) argv[n++] = cmd[i];
    static char chan[4400], vf[4400], vp[4400];
    /* the advisor's flags (mlgo-farm's policyhost/advisors.py): the inliner's, or the eviction advisor's */
    snprintf(chan, sizeof chan, "-%s-interactive-channel-base=%s", W.evict ? "regalloc-evict" : "inliner", base);
    const char *opts[6] = {"-enable-ml-inliner=release", chan, "-inliner-interactive-include-default", 0, 0, 0};
    if (W.evict) { opts[0] = "-regalloc-enable-advisor=release"; opts[2] = 0; }
    if (vocab) {
        snprintf(vf, sizeof vf, "-ml-inliner-ir2vec-vocab-file=%s", vocab); snprintf(vp, sizeof vp, "-ir2vec-vocab-path=%s", vocab);
        opts[3] = vf; opts[4] = vp;
    }
    for (int i = 0; opts[i]; i++) { argv[n++] = "-mllvm"; argv[n++] = (char *)opts[i]; }
    int ep[2]; if (pipe2(ep, O_CLOEXEC)) die(1, "pipe: %s", strerror(errno));
    sigset_t block, old; sigemptyset(&block); sigaddset(&block, SIGTERM); sigaddset(&block, SIGINT); sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &old);
    child = fork();
    if (child < 0) die(1, "fork: %s", strerror(errno));
    if (child == 0) {
        setsid(); signal(SIGTERM, SIG_DFL); signal(SIGINT, SIG_DFL); signal(SIGHUP, SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(argv[0], argv); int e = errno; ssize_t w = write(ep[1], &e, sizeof e); (void)w; _exit(127);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(ep[1]); int e; if (read(ep[0], &e, sizeof e) == sizeof e) { waitpid(child, NULL, 0); child = -1; die(127, "cannot run %s: %s", cmd[0], strerror(e)); }
    close(ep[0]);
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    struct pollfd pf[3] = {{rfd, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}, {pidfd, POLLIN, 0}};
    double window = now(), talked = -1; long long cpu_at = tree_cpu(child); int status = 0;
    unsigned char chunk[1 << 16];
    for (;;) {
        poll(pf, pidfd >= 0 ? 3 : 2, 50);
        signalled();
        int exited = waitpid(child, &status, WNOHANG) == child;
        ssize_t r; int any = 0;
        while ((r = read(rfd, chunk, sizeof chunk)) > 0) { feed(wfd, chunk, r); any = 1; signalled(); }
        if (any) { window = talked = now(); if (!exited) continue; }
        if (exited) {
            child = -1;
            if (blen && WIFEXITED(status) && WEXITSTATUS(status) == 0)
                die(1, "the compiler exited leaving a truncated message (%zu bytes) on the channel", blen);
            break;
        }
        double t = now();
        if (talked >= 0 && t - talked > silence)
            die(1, "the compiler (pid %d) sent nothing on its channel for %gs (--max-silence) after %lld decisions; killed it", child, silence, decisions);
        if (t - window > timeout) {
            long long cpu = tree_cpu(child);
            if (cpu <= cpu_at) die(1, "the compiler (pid %d) stopped: no data and no CPU progress for %gs after %lld decisions; killed it", child, timeout, decisions);
            window = t; cpu_at = cpu;
        }
    }
    close(rfd); close(wfd); if (pidfd >= 0) close(pidfd); cleanup();
    if (WIFSIGNALED(status)) die(1, "%s crashed with signal %d", cmd[0], WTERMSIG(status));
    return WEXITSTATUS(status);
}

/* --decide: the compiler's stream on stdin, the advice on stdout (tests feed it crafted observations) */
static int decide(void) {
    unsigned char chunk[1 << 16]; ssize_t r;
    for (;;) {
        if (!wait_for(0, POLLIN, io_timeout)) die(1, "nothing came on stdin for %gs (--timeout)", io_timeout);
        if ((r = read(0, chunk, sizeof chunk)) == 0) break;
        if (r < 0) { if (errno == EINTR || errno == EAGAIN) continue; die(1, "reading stdin: %s", strerror(errno)); }
        feed(1, chunk, r);
    }
    if (blen) die(1, "the stream ended with a truncated message (%zu bytes)", blen);
    return 0;
}

int main(int argc, char **argv) {
    const char *weights = NULL, *vocab = NULL; double timeout = 60, silence = -1; int mode_decide = 0, i = 1;
    static const char usage[] = "usage: mlgo-policy-host --weights FILE [--vocab VOCAB.json] [--timeout S] "
                                "[--max-silence S] -- COMPILER ARGS...  |  --weights FILE --decide [--logits]";
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) { puts(usage); return 0; }
    if (argc > 1 && !strcmp(argv[1], "--version")) { printf("%s %s (weights format %d)\n", prog, VERSION, FORMAT); return 0; }
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        if (!strcmp(argv[i], "--")) { i++; break; }
        char *name = argv[i] + 2, *eq = strchr(name, '='), *value = NULL; size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (!strncmp(name, "decide", len) && len == 6) { mode_decide = 1; continue; }
        if (!strncmp(name, "logits", len) && len == 6) { print_logits = 1; continue; }
        if (eq) value = eq + 1; else if (i + 1 < argc) value = argv[++i]; else die(2, "option %s needs a value", argv[i]);
        if (len == 7 && !strncmp(name, "weights", 7)) weights = value;
        else if (len == 5 && !strncmp(name, "vocab", 5)) vocab = value;
        else if (len == 7 && !strncmp(name, "timeout", 7)) timeout = seconds(value, "--timeout");
        else if (len == 11 && !strncmp(name, "max-silence", 11)) silence = seconds(value, "--max-silence");
        else die(2, "unknown option --%.*s (%s)", (int)len, name, usage);
    }
    if (!weights) die(2, "--weights FILE is required (%s)", usage);
    io_timeout = timeout;
    if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC)) die(1, "pipe: %s", strerror(errno));
    struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL); sigaction(SIGINT, &sa, NULL); sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    load_weights(weights);
    if (vocab && W.evict) die(2, "an IR2Vec vocabulary does not apply to an eviction policy (only to the inliner's)");
    if (mode_decide) return decide();
    if (i >= argc) die(2, "no compiler command given (%s)", usage);
    static char vocab_abs[4096];
    if (vocab) {
        struct stat vs; /* clang reads it whole: /dev/zero would take all its memory, a FIFO block it */
        if (access(vocab, R_OK) || stat(vocab, &vs)) die(2, "IR2Vec vocabulary %s: %s", vocab, strerror(errno));
        if (!S_ISREG(vs.st_mode)) die(2, "IR2Vec vocabulary %s is not a regular file", vocab);
        if (!realpath(vocab, vocab_abs)) die(2, "IR2Vec vocabulary %s: %s", vocab, strerror(errno));
        vocab = vocab_abs;
    }
    return run(argv + i, argc - i, vocab, timeout, silence > 0 ? silence : 10 * timeout);
}
