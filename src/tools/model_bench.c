/*
 * tools/model_bench.c - tokstream-model-bench: how fast the llama backend
 * prefills and decodes on this machine, next to what memory bandwidth
 * allows. Decoding one token reads every weight once, so
 *     TPOT floor = weight bytes / read bandwidth,
 * and a batch of B sequences shares that read (its step costs more
 * compute, not more weight traffic).
 *
 * Prints plain tables:
 *   1. memory bandwidth: memcpy between two buffers much larger than
 *      the caches (bytes copied per second), and a streaming read of one
 *      with 1 and with N threads; the median of several runs each;
 *   2. decode: for synthetic models of about 1M to 63M parameters
 *      (model_synth.h, written to a temporary directory), the median
 *      step time (TPOT) at batch 1 and batch 8, and the floor;
 *   3. prefill: time to first token against the prompt's length.
 * With --model and --tokenizer, that model replaces the synthetic ones;
 * with --prompt as well, it generates text instead (a smoke test for a
 * real llama2.c checkpoint). With --bandwidth-only, table 1 alone (for a
 * script that computes the floor of another engine, e.g.
 * scripts/bench-llamacpp).
 *
 * Exit status: 0, 1 on a failure (stderr says which), 2 bad arguments.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/llama.h"
#include "model/model.h"
#include "model/model_pool.h"
#include "model/model_file.h"
#include "model/model_sample.h"
#include "model/model_synth.h"
#include "model/quant.h"

#define BENCH_BIG_MIN ((size_t)1 << 30)    /* DRAM test buffers: at least
						 * 1 GiB and 4 x the L3 */
#define BENCH_BIG_MAX ((size_t)4 << 30)
#define BENCH_SMALL ((size_t)32 << 20)    /* cache test: 32 MiB or half
					   * the L3 */
#define BENCH_BW_RUNS 7
#define BENCH_RUNS_MAX 70          /* the cache test runs 10 x as often */
#define BENCH_DECODE_STEPS 24
#define BENCH_WARMUP_STEPS 2
#define BENCH_PREFILL_RUNS 3
#define BENCH_MAX_BATCH 8
#define BENCH_EXIT_FAIL 1
#define BENCH_EXIT_USAGE 2

struct bench_opts {
	uint32_t threads;            /* 0 = online CPUs */
	int quick;                   /* smaller models, fewer runs */
	int bandwidth_only;          /* the bandwidth table alone */
	const char *model, *tokenizer, *prompt;
	uint32_t n;                  /* tokens to generate with --prompt */
	const char *prompt_ids;      /* --prompt-ids: greedy from these ids */
	int margins;                 /* --margins: each step's top-2 gap */
	uint32_t batch;              /* sequences decoding together */
	int batch_given;
};

/* Synthetic models, about 1M, 8M, 34M and 63M parameters (with their
 * separate classifiers). */
static const struct {
	uint32_t dim, hidden, layers, heads, kv_heads, vocab;
} bench_sizes[] = {
	{ 128, 384, 4, 4, 4, 1024 },
	{ 288, 768, 6, 6, 6, 4096 },
	{ 512, 1376, 8, 8, 8, 8192 },
	{ 768, 2048, 8, 12, 4, 8192 },
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- memory bandwidth ------------------------------------------------- */

struct bench_read {
	const float *p;
	float sum[MODEL_POOL_MAX_THREADS];
};

#if defined(__GNUC__)
typedef float bench_v8 __attribute__((vector_size(32)));
#endif

/* Sums floats [lo, hi) x 4096 of the buffer in vector registers (as the
 * model's kernels load weights), so that memory is what limits it. */
#if defined(__x86_64__) && defined(__ELF__) && defined(__GNUC__) && \
    !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx2", "default")))
#endif
static void
read_fn(void *arg, uint32_t lo, uint32_t hi, uint32_t tid)
{
	struct bench_read *r = arg;
	const float *p = r->p + (size_t)lo * 4096;
	size_t n = (size_t)(hi - lo) * 4096, i;
#if defined(__GNUC__)
	bench_v8 s0 = { 0, 0, 0, 0, 0, 0, 0, 0 }, s1 = s0, s2 = s0, s3 = s0;
	bench_v8 a, b, c, d;

	for (i = 0; i < n; i += 32) {
		memcpy(&a, p + i, sizeof(a));
		memcpy(&b, p + i + 8, sizeof(b));
		memcpy(&c, p + i + 16, sizeof(c));
		memcpy(&d, p + i + 24, sizeof(d));
		s0 += a;
		s1 += b;
		s2 += c;
		s3 += d;
	}
	s0 += s1 + s2 + s3;
	r->sum[tid] = s0[0] + s0[1] + s0[2] + s0[3] + s0[4] + s0[5] + s0[6] +
	    s0[7];
#else
	float s[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
	int k;

	for (i = 0; i < n; i += 8)
		for (k = 0; k < 8; k++)
			s[k] += p[i + k];
	r->sum[tid] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
#endif
}

/* GB/s of a streaming read of buf[bytes] with `threads` threads, median
 * of runs. */
static double
bench_read_bw(const float *buf, size_t bytes, uint32_t threads, int runs)
{
	struct model_pool *pool;
	struct bench_read r;
	double t[BENCH_RUNS_MAX], t0;
	int i;

	if (model_pool_create(&pool, threads) != TS_OK)
		return 0;
	memset(&r, 0, sizeof(r));
	r.p = buf;
	for (i = 0; i < runs; i++) {
		t0 = now_s();
		model_pool_run(pool, read_fn, &r,
		    (uint32_t)(bytes / sizeof(float) / 4096));
		t[i] = now_s() - t0;
	}
	model_pool_destroy(pool);
	if (r.sum[0] == 12345.0f)
		fputs("", stdout);      /* keep the sums alive */
	return (double)bytes / median(t, (size_t)runs) / 1e9;
}

/* The last-level cache's size in bytes, 0 if unknown. */
static size_t
bench_l3(void)
{
#ifdef _SC_LEVEL3_CACHE_SIZE
	long n = sysconf(_SC_LEVEL3_CACHE_SIZE);

	return n > 0 ? (size_t)n : 0;
#else
	return 0;
#endif
}

/*
 * Prints the bandwidth table; returns the DRAM read GB/s with all the
 * threads (the floor's denominator). The DRAM buffers are at least 4 x
 * the L3 (big caches are common on servers: 300 MiB on some VMs), the
 * cache buffer half of it.
 */
static double
bench_bandwidth(uint32_t threads, int runs)
{
	size_t l3 = bench_l3();
	size_t big = l3 * 4 > BENCH_BIG_MIN ? l3 * 4 : BENCH_BIG_MIN;
	size_t small = l3 > 0 && l3 / 2 < BENCH_SMALL ? l3 / 2 : BENCH_SMALL;
	char *a, *b;
	double t[BENCH_RUNS_MAX], t0, copy, r1, rn, rc;
	int i;

	if (big > BENCH_BIG_MAX)
		big = BENCH_BIG_MAX;
	big &= ~(size_t)0xffff;
	small &= ~(size_t)0xffff;
	a = malloc(big);
	b = malloc(big);
	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		fprintf(stderr, "tokstream-model-bench: no memory for two "
		    "%zu MiB buffers\n", big >> 20);
		return 0;
	}
	memset(a, 1, big);
	memset(b, 2, big);
	for (i = 0; i < runs; i++) {
		t0 = now_s();
		memcpy(b, a, big);
		t[i] = now_s() - t0;
	}
	copy = (double)big / median(t, (size_t)runs) / 1e9;
	r1 = bench_read_bw((const float *)a, big, 1, runs);
	rn = threads > 1 ? bench_read_bw((const float *)a, big, threads,
	    runs) : r1;
	rc = bench_read_bw((const float *)a, small, threads, runs * 10);
	printf("memory bandwidth (median of %d runs; L3 %zu MiB)\n", runs,
	    l3 >> 20);
	printf("  %-8s %9s %7s %8s\n", "test", "buffer", "threads", "GB/s");
	printf("  %-8s %5zu MiB %7u %8.1f   (bytes copied / s)\n", "memcpy",
	    big >> 20, 1u, copy);
	printf("  %-8s %5zu MiB %7u %8.1f\n", "read", big >> 20, 1u, r1);
	if (threads > 1)
		printf("  %-8s %5zu MiB %7u %8.1f\n", "read", big >> 20,
		    threads, rn);
	printf("  %-8s %5zu MiB %7u %8.1f   (in cache)\n", "read",
	    small >> 20, threads, rc);
	printf("\n");
	free(a);
	free(b);
	return rn;
}

/* ---- the model -------------------------------------------------------- */

/* A prompt of about `tokens` tokens: a text repeated. */
static char *
bench_prompt(uint32_t tokens, size_t *len)
{
	static const char words[] = " the little girl was happy and she "
	    "went to play with her big dog in the water";
	size_t cap = (size_t)tokens * 8 + sizeof(words), n = 0;
	char *p = xmalloc(cap);

	while (n + sizeof(words) < cap) {
		memcpy(p + n, words, sizeof(words) - 1);
		n += sizeof(words) - 1;
	}
	*len = n;
	return p;
}

/* Every sequence of the bench decodes greedily. */
static struct engine_sampling greedy;

/* The prompt's tokens, as the backend counts them (BOS included). */
static enum ts_err
prompt_tokens(const struct engine_backend *b, const char *p, size_t len,
    uint32_t *n)
{
	uint64_t k = 0;
	enum ts_err rc = b->count_tokens(b->impl, 0, p, len, &k);

	*n = (uint32_t)k;
	return rc;
}

/* Cuts the prompt (p, *len) down to at most `tokens` tokens. */
static void
bench_trim(const struct engine_backend *b, const char *p, size_t *len,
    uint32_t tokens)
{
	uint32_t n;

	while (*len > 0 && (prompt_tokens(b, p, *len, &n) !=
	    TS_OK || n > tokens))
		*len -= *len > 64 ? *len / 16 : 1;
}

/* Median seconds of a decode step at batch `batch`; NaN on failure. */
static double
bench_decode(struct engine_backend *b, uint32_t batch, int steps)
{
	void *seqs[BENCH_MAX_BATCH];
	uint32_t ids[BENCH_MAX_BATCH];
	double t[BENCH_DECODE_STEPS], t0, res = -1;
	size_t len;
	char *p = bench_prompt(16, &len);
	uint32_t i;
	int k;

	bench_trim(b, p, &len, 16);
	memset(seqs, 0, sizeof(seqs));
	for (i = 0; i < batch; i++)
		if (b->seq_start(b->impl, 0, p, len, i, &greedy, &seqs[i]) != TS_OK)
			goto out;
	for (k = 0; k < 1 + BENCH_WARMUP_STEPS; k++)
		if (b->step(b->impl, seqs, batch, ids) != TS_OK)
			goto out;
	for (k = 0; k < steps; k++) {
		t0 = now_s();
		if (b->step(b->impl, seqs, batch, ids) != TS_OK)
			goto out;
		t[k] = now_s() - t0;
	}
	res = median(t, (size_t)steps);
out:
	for (i = 0; i < batch; i++)
		b->seq_free(b->impl, seqs[i]);
	free(p);
	return res;
}

/* Median seconds of seq_start (the prefill) for a prompt of about
 * `tokens` tokens; *got gets its real length. */
static double
bench_prefill(struct engine_backend *b, uint32_t tokens, int runs,
    uint32_t *got)
{
	double t[BENCH_PREFILL_RUNS], t0;
	size_t len;
	char *p = bench_prompt(tokens, &len);
	void *seq;
	int k;

	bench_trim(b, p, &len, tokens);
	*got = 0;
	prompt_tokens(b, p, len, got);
	for (k = 0; k < runs; k++) {
		t0 = now_s();
		if (b->seq_start(b->impl, 0, p, len, 0, &greedy, &seq) != TS_OK) {
			free(p);
			return -1;
		}
		t[k] = now_s() - t0;
		b->seq_free(b->impl, seq);
	}
	free(p);
	return median(t, (size_t)runs);
}

static int
bench_open(struct engine_backend *b, const char *model, const char *tok,
    uint32_t threads)
{
	struct model_options o;
	char err[512];

	model_options_defaults(&o);
	o.threads = threads;
	if (llama_backend_open(b, model, tok, &o, err, sizeof(err)) !=
	    TS_OK) {
		fprintf(stderr, "tokstream-model-bench: %s\n", err);
		return -1;
	}
	return 0;
}

static void
decode_header(double bw, int steps)
{
	printf("decode: median of %d steps after a 16-token prompt; floor = "
	    "weight bytes / %.1f GB/s\n", steps, bw);
	printf("  %8s %7s %5s %6s %7s %5s %8s %8s %8s %7s\n", "params",
	    "MiB", "dim", "layers", "threads", "batch", "TPOT ms", "tok/s",
	    "floor ms", "/floor");
}

/* One row per batch size for the open model. Returns -1 on failure. */
static int
decode_rows(struct engine_backend *b, uint32_t threads, double bw,
    int steps)
{
	static const uint32_t batches[] = { 1, BENCH_MAX_BATCH };
	const struct model_config *c = llama_backend_config(b);
	uint64_t params = model_param_count(c);
	double floor_ms = bw > 0 ? (double)params * 4.0 / (bw * 1e9) * 1e3 :
	    0;
	size_t i;

	for (i = 0; i < sizeof(batches) / sizeof(batches[0]); i++) {
		double t = bench_decode(b, batches[i], steps) * 1e3;

		if (t < 0)
			return -1;
		printf("  %7.1fM %7.1f %5u %6u %7u %5u %8.2f %8.1f %8.2f "
		    "%7.1f\n", (double)params / 1e6,
		    (double)model_file_bytes(c) / 1048576.0, c->dim,
		    c->n_layers, threads, batches[i], t,
		    batches[i] * 1e3 / t, floor_ms,
		    floor_ms > 0 ? t / floor_ms : 0);
	}
	fflush(stdout);
	return 0;
}

static int
prefill_rows(struct engine_backend *b, int runs)
{
	static const uint32_t lens[] = { 16, 64, 128, 256, 511 };
	uint32_t ctx = b->context_len(b->impl), got;
	size_t i;

	printf("prefill (time to first token, median of %d): %.1fM "
	    "parameters\n", runs,
	    (double)model_param_count(llama_backend_config(b)) / 1e6);
	printf("  %7s %9s %9s %10s\n", "tokens", "TTFT ms", "ms/token",
	    "tokens/s");
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		double t;

		if (lens[i] > ctx)
			break;
		t = bench_prefill(b, lens[i], runs, &got) * 1e3;
		if (t < 0)
			return -1;
		printf("  %7u %9.2f %9.3f %10.0f\n", got, t, t / got,
		    got * 1e3 / t);
	}
	printf("\n");
	return 0;
}

/* --prompt: generates n tokens greedily and prints them, then timings. */
static int
bench_generate(struct engine_backend *b, const char *prompt, uint32_t n)
{
	uint32_t id, prev = 1, i;
	double t0, ttft, t1;
	size_t len;
	void *seq;
	const char *s;

	t0 = now_s();
	if (b->seq_start(b->impl, 0, prompt, strlen(prompt), 0, &greedy, &seq) !=
	    TS_OK) {
		fprintf(stderr, "tokstream-model-bench: the prompt does not "
		    "fit the context\n");
		return -1;
	}
	if (b->step(b->impl, &seq, 1, &id) != TS_OK)
		return -1;
	ttft = now_s() - t0;
	t1 = now_s();
	fputs(prompt, stdout);
	for (i = 0; i < n; i++) {
		if (i > 0 && b->step(b->impl, &seq, 1, &id) != TS_OK)
			break;
		s = llama_backend_decode(b, prev, id, &len);
		fwrite(s, 1, len, stdout);
		fflush(stdout);
		prev = id;
	}
	printf("\n\nTTFT %.1f ms, TPOT %.2f ms (%u tokens)\n", ttft * 1e3,
	    n > 1 ? (now_s() - t1) * 1e3 / (n - 1) : 0.0, n);
	b->seq_free(b->impl, seq);
	return 0;
}

/* The gap between the largest and second largest of x[0..n). */
static double
top_gap(const float *x, uint32_t n)
{
	float a = -INFINITY, b = -INFINITY;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (x[i] > a) {
			b = a;
			a = x[i];
		} else if (x[i] > b) {
			b = x[i];
		}
	}
	return (double)a - (double)b;
}

/* The standard deviation of x[0..n). */
static double
logit_sd(const float *x, uint32_t n)
{
	double m = 0, s = 0;
	uint32_t i;

	for (i = 0; i < n; i++)
		m += x[i];
	m /= n;
	for (i = 0; i < n; i++)
		s += (x[i] - m) * (x[i] - m);
	return sqrt(s / n);
}

/*
 * --prompt-ids: the model (any format model_file.h opens) run directly:
 * the prompt's ids prefilled in one pass for each of `batch` sequences,
 * then n greedy decode steps of all of them in one pass each (argmax,
 * the lowest id on ties, as llama.cpp's greedy sampler). Run twice, the
 * first a warm-up; prints one JSON line of the second: the first
 * sequence's ids, the prefill time, the decode step's median and p90
 * (TPOT) and the tokens per second of the batch. For the side-by-side
 * with llama.cpp (scripts/bench-model-llamacpp).
 */
static int
bench_ids(const struct bench_opts *o)
{
	struct model_file *f;
	struct model_run *r = NULL;
	struct model_row *rows = NULL;
	float **kv = NULL, *lg = NULL;
	uint32_t *ids = NULL, *out = NULL, np = 0, b, k, v, ctx, round;
	double *step = NULL, *gap = NULL, t0, prefill = 0, sd = 0;
	char err[512];
	const char *s = o->prompt_ids;
	int rc = -1;

	if (model_file_open(&f, o->model, o->tokenizer, err, sizeof(err)) !=
	    TS_OK) {
		fprintf(stderr, "tokstream-model-bench: %s\n", err);
		return -1;
	}
	v = f->m->cfg.vocab_size;
	ids = xmalloc((strlen(s) / 2 + 2) * sizeof(*ids));
	while (*s != '\0') {
		char *end;
		unsigned long x = strtoul(s, &end, 10);

		if (end == s || x >= v || (*end != ',' && *end != '\0')) {
			fprintf(stderr, "tokstream-model-bench: --prompt-ids: "
			    "ids below %u, comma-separated\n", v);
			goto out;
		}
		ids[np++] = (uint32_t)x;
		s = *end == ',' ? end + 1 : end;
	}
	ctx = np + o->n + 1;
	if (np == 0) {
		fprintf(stderr, "tokstream-model-bench: --prompt-ids: at least "
		    "one id\n");
		goto out;
	}
	if (ctx > f->m->cfg.seq_len) {
		fprintf(stderr, "tokstream-model-bench: %u prompt ids and %u "
		    "tokens do not fit the context %u\n", np, o->n,
		    f->m->cfg.seq_len);
		goto out;
	}
	if (model_run_create(&r, f->m, np > o->batch ? np : o->batch, ctx,
	    o->threads) != TS_OK) {
		fprintf(stderr, "tokstream-model-bench: cannot start threads\n");
		goto out;
	}
	kv = xcalloc(o->batch, sizeof(*kv));
	for (b = 0; b < o->batch; b++)
		kv[b] = xcalloc(model_kv_floats(&f->m->cfg, ctx),
		    sizeof(float));
	rows = xmalloc((np > o->batch ? np : o->batch) * sizeof(*rows));
	lg = xmalloc((size_t)o->batch * v * sizeof(float));
	out = xmalloc((size_t)o->batch * (o->n + 1) * sizeof(*out));
	step = xmalloc((o->n + 1) * sizeof(*step));
	gap = xcalloc(o->n + 1, sizeof(*gap));
	for (round = 0; round < 2; round++) {
		t0 = now_s();
		for (b = 0; b < o->batch; b++) {
			for (k = 0; k < np; k++) {
				rows[k].kv = kv[b];
				rows[k].token = ids[k];
				rows[k].pos = k;
				rows[k].logits = k + 1 == np ?
				    lg + (size_t)b * v : NULL;
			}
			model_forward(r, rows, np);
			out[b * (o->n + 1)] = model_argmax(lg + (size_t)b * v,
			    v);
		}
		gap[0] = top_gap(lg, v);
		sd = logit_sd(lg, v);
		prefill = (now_s() - t0) * 1e3;
		for (k = 1; k < o->n; k++) {
			t0 = now_s();
			for (b = 0; b < o->batch; b++) {
				rows[b].kv = kv[b];
				rows[b].token = out[b * (o->n + 1) + k - 1];
				rows[b].pos = np + k - 1;
				rows[b].logits = lg + (size_t)b * v;
			}
			model_forward(r, rows, o->batch);
			for (b = 0; b < o->batch; b++)
				out[b * (o->n + 1) + k] = model_argmax(lg +
				    (size_t)b * v, v);
			step[k - 1] = (now_s() - t0) * 1e3;
			gap[k] = top_gap(lg, v);
		}
	}
	printf("{\"ids\":[");
	for (k = 0; k < o->n; k++)
		printf("%s%u", k ? "," : "", out[k]);
	if (o->margins) {
		/* how far each greedy choice was from a tie: a part from
		 * another implementation at a small gap is rounding */
		printf("],\"logit_sd\":%.6g,\"top2_gap\":[", sd);
		for (k = 0; k < o->n; k++)
			printf("%s%.6g", k ? "," : "", gap[k]);
	}
	{
		size_t ns = o->n > 1 ? o->n - 1 : 0;
		double med = ns ? median(step, ns) : 0, p90;

		/* median sorted step[]: its 90th percentile by rank */
		p90 = ns ? step[(size_t)(0.9 * (double)(ns - 1) + 0.5)] : 0;
		printf("],\"prefill_ms\":%.3f,\"tpot_ms_median\":%.4f,"
		    "\"tpot_ms_p90\":%.4f,\"tokens_per_s\":%.2f,"
		    "\"threads\":%u,\"batch\":%u,\"kernels\":\"%s\","
		    "\"weights\":\"%s\",\"weight_bytes\":%llu}\n", prefill,
		    med, p90, med > 0 ? o->batch * 1e3 / med : 0,
		    model_run_threads(r), o->batch, quant_kernel_name(),
		    f->weight_types,
		    (unsigned long long)model_weight_bytes(f->m));
	}
	rc = 0;
out:
	for (b = 0; kv != NULL && b < o->batch; b++)
		free(kv[b]);
	free(kv);
	free(rows);
	free(lg);
	free(out);
	free(step);
	free(gap);
	free(ids);
	model_run_free(r);
	model_file_close(f);
	return rc;
}

static void
bench_usage(FILE *f)
{
	fputs("usage: tokstream-model-bench [--threads N] [--quick]\n"
	    "           [--model PATH [--tokenizer FILE] [--prompt TEXT [-n N]]]"
	    "\n       tokstream-model-bench --model PATH --prompt-ids IDS "
	    "[-n N] [--batch B]"
	    "\n       tokstream-model-bench --bandwidth-only [--threads N] "
	    "[--quick]\n\n"
	    "Measures memory bandwidth, then the llama backend's decode step\n"
	    "time (TPOT) next to its floor (weight bytes / bandwidth) and\n"
	    "its prefill time, on synthetic models of about 1M to 63M\n"
	    "parameters written to a temporary directory ($TMPDIR or\n"
	    "/tmp).\n\n"
	    "  --threads N        compute threads (default: online CPUs)\n"
	    "  --quick            the two smallest models, fewer runs\n"
	    "  --bandwidth-only   print the memory bandwidth table only\n"
	    "  --model PATH       a GGUF file, a Hugging Face folder or a\n"
	    "                     llama2.c checkpoint instead\n"
	    "  --tokenizer FILE   a checkpoint's tokenizer.bin\n"
	    "  --prompt-ids IDS   run the model on these token ids (comma-\n"
	    "                     separated): -n greedy tokens for --batch B\n"
	    "                     sequences at once (default 1), one JSON\n"
	    "                     line: ids, prefill, TPOT median and p90\n"
	    "  --margins          with --prompt-ids: each step's gap between\n"
	    "                     the two largest logits (top2_gap)\n"
	    "  --prompt TEXT      generate from TEXT instead of measuring\n"
	    "  -n N               tokens to generate (default 64)\n", f);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 'T' },
		{ "quick", no_argument, NULL, 'q' },
		{ "bandwidth-only", no_argument, NULL, 'B' },
		{ "model", required_argument, NULL, 'm' },
		{ "tokenizer", required_argument, NULL, 't' },
		{ "prompt", required_argument, NULL, 'p' },
		{ "prompt-ids", required_argument, NULL, 'I' },
		{ "batch", required_argument, NULL, 'b' },
		{ "margins", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct bench_opts o;
	struct engine_backend b;

	engine_sampling_greedy(&greedy);
	char dir[512], mpath[600], tpath[600], err[512];
	const char *tmp = getenv("TMPDIR");
	double bw;
	size_t i, nsizes;
	int ch, runs, steps, rc = 0;
	char *end;

	memset(&o, 0, sizeof(o));
	o.n = 64;
	while ((ch = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'T':
		case 'n':
		case 'b':
			errno = 0;
			{
				unsigned long v = strtoul(optarg, &end, 10);

				if (errno || *end || end == optarg ||
				    v > (ch == 'T' ? MODEL_POOL_MAX_THREADS :
				    1000000ul)) {
					fprintf(stderr, "tokstream-model-bench"
					    ": bad number %s\n", optarg);
					return BENCH_EXIT_USAGE;
				}
				if (ch == 'T')
					o.threads = (uint32_t)v;
				else if (ch == 'b') {
					o.batch = (uint32_t)v;
					o.batch_given = 1;
				}
				else
					o.n = (uint32_t)v;
			}
			break;
		case 'q': o.quick = 1; break;
		case 'B': o.bandwidth_only = 1; break;
		case 'm': o.model = optarg; break;
		case 't': o.tokenizer = optarg; break;
		case 'p': o.prompt = optarg; break;
		case 'I': o.prompt_ids = optarg; break;
		case 'G': o.margins = 1; break;
		case 'h': bench_usage(stdout); return 0;
		default: bench_usage(stderr); return BENCH_EXIT_USAGE;
		}
	}
	if (optind < argc || (o.tokenizer != NULL && o.model == NULL) ||
	    (o.prompt != NULL && o.model == NULL) ||
	    (o.prompt_ids != NULL && (o.model == NULL || o.prompt != NULL)) ||
	    o.batch > 64 ||
	    (o.bandwidth_only && o.model != NULL)) {
		bench_usage(stderr);
		return BENCH_EXIT_USAGE;
	}
	if (o.threads == 0)
		o.threads = model_pool_default_threads();
	if (o.batch == 0 && o.batch_given) {
		fprintf(stderr, "tokstream-model-bench: --batch must be 1..64\n");
		return BENCH_EXIT_USAGE;
	}
	if (o.batch == 0)
		o.batch = 1;
	if (o.prompt_ids != NULL)
		return bench_ids(&o) == 0 ? 0 : BENCH_EXIT_FAIL;

	if (o.prompt != NULL) {
		if (bench_open(&b, o.model, o.tokenizer, o.threads) != 0)
			return BENCH_EXIT_FAIL;
		rc = bench_generate(&b, o.prompt, o.n);
		llama_backend_close(&b);
		return rc ? BENCH_EXIT_FAIL : 0;
	}

	runs = o.quick ? 3 : BENCH_BW_RUNS;
	steps = o.quick ? 8 : BENCH_DECODE_STEPS;
	bw = bench_bandwidth(o.threads, runs);
	if (o.bandwidth_only)
		return bw > 0 ? 0 : BENCH_EXIT_FAIL;
	if (o.model != NULL) {
		if (bench_open(&b, o.model, o.tokenizer, o.threads) != 0)
			return BENCH_EXIT_FAIL;
		decode_header(bw, steps);
		rc = decode_rows(&b, o.threads, bw, steps);
		printf("\n");
		if (rc == 0)
			rc = prefill_rows(&b, o.quick ? 1 :
			    BENCH_PREFILL_RUNS);
		llama_backend_close(&b);
		return rc ? BENCH_EXIT_FAIL : 0;
	}

	snprintf(dir, sizeof(dir), "%s/tokstream-bench.XXXXXX",
	    tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL) {
		fprintf(stderr, "tokstream-model-bench: mkdtemp %s: %s\n", dir,
		    strerror(errno));
		return BENCH_EXIT_FAIL;
	}
	snprintf(mpath, sizeof(mpath), "%s/model.bin", dir);
	snprintf(tpath, sizeof(tpath), "%s/tokenizer.bin", dir);
	nsizes = o.quick ? 2 : sizeof(bench_sizes) / sizeof(bench_sizes[0]);
	decode_header(bw, steps);
	for (i = 0; i < nsizes && rc == 0; i++) {
		struct model_synth s;
		int last = i + 1 == nsizes;

		model_synth_defaults(&s);
		s.cfg.dim = bench_sizes[i].dim;
		s.cfg.hidden_dim = bench_sizes[i].hidden;
		s.cfg.n_layers = bench_sizes[i].layers;
		s.cfg.n_heads = bench_sizes[i].heads;
		s.cfg.n_kv_heads = bench_sizes[i].kv_heads;
		s.cfg.vocab_size = bench_sizes[i].vocab;
		s.cfg.seq_len = 512;
		if (model_synth_write_checkpoint(&s, mpath, err, sizeof(err))
		    != TS_OK || model_synth_write_tokenizer(&s, tpath, err,
		    sizeof(err)) != TS_OK) {
			fprintf(stderr, "tokstream-model-bench: %s\n", err);
			rc = -1;
			break;
		}
		if (bench_open(&b, mpath, tpath, o.threads) != 0) {
			rc = -1;
			break;
		}
		rc = decode_rows(&b, o.threads, bw, steps);
			if (rc == 0 && last) {
			printf("\n");
			rc = prefill_rows(&b, o.quick ? 1 :
			    BENCH_PREFILL_RUNS);
		}
		llama_backend_close(&b);
	}
	unlink(mpath);
	unlink(tpath);
	rmdir(dir);
	return rc ? BENCH_EXIT_FAIL : 0;
}
