/*
 * server/options.c - tokstream-fcgi's command line: parsing, checking and
 * the usage text (docs/OPERATIONS.md "Responder options"). A bad value is
 * a one-line message on stderr and exit status 2.
 */
#include "server/options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/backends.h"
#include "engine/profile.h"
#include "config.h"
#include "handlers/auth.h"
#include "proto/http.h"
#include "transport/io.h"
#include "proto/resume.h"

void
options_usage(FILE *f)
{
	fprintf(f,
"usage: tokstream-fcgi [options]\n"
"FastCGI responder for tokstream; normally started by spawn-fcgi (it\n"
"accepts on fd 0) or with --socket.\n"
"\n"
"      --max-num-seqs N         slots: sequences decoded together (default %d)\n"
"      --max-waiting N          streams that may wait for a slot; beyond\n"
"                               max-num-seqs + max-waiting streams held,\n"
"                               429 (default %d)\n"
"      --io-threads N           threads that write the streams, 0 = one per\n"
"                               CPU (default 0; rarely worth changing)\n"
"      --load-factor F          step and prefill time factor at max-num-seqs,\n"
"                               linear from 1 at one sequence (default %.1f)\n"
"      --jitter-prefill-ms MS   prefill time standard deviation (default 0)\n"
"      --jitter-tpot-ms MS      decode step standard deviation (default 0)\n"
"      --seed N                 jitter PRNG seed (default fixed)\n"
"      --latency-profile FILE|preset:NAME\n"
"                               the latency model's parameters from a profile\n"
"                               (tokbench fit writes one) or a preset (%s);\n"
"                               the knobs above given beside it override it\n"
"      --write-stall-ms MS      cancel a stream whose write has been blocked\n"
"                               this long, 0 = never (default %.0f)\n"
"      --accept-timeout-ms MS   close a FastCGI connection that has not sent\n"
"                               its whole request this long after it was\n"
"                               accepted, and end an accept thread's read or\n"
"                               write on one this long after the thread took\n"
"                               it, 100 to 600000 (default %.0f)\n"
"      --no-cancel              demo only: keep generating for clients that\n"
"                               left (the failure mode tokstream avoids)\n"
"      --api-key KEY            every request that generates (/v1, /stream,\n"
"                               /generate) must send Authorization: Bearer\n"
"                               KEY, else 401 (default: no key)\n"
"      --api-key-file FILE      the same, the key in FILE's first line (out\n"
"                               of ps)\n"
"      --open-lab-endpoints     with a key, /stream and /generate need none\n"
"                               (default: they need it as /v1 does)\n"
"      --served-model-name NAME [NAME...]  the /v1 model names, the first\n"
"                               in responses (default tokstream-sim, or the\n"
"                               --model file's name; up to 16)\n"
"      --backend sim|llama      what makes the tokens (default sim: the\n"
"                               deterministic simulator and latency model)\n"
"      --model PATH             --backend llama's model: a GGUF file, a\n"
"                               Hugging Face folder (config.json,\n"
"                               safetensors, tokenizer.json), or a llama2.c\n"
"                               checkpoint\n"
"      --tokenizer FILE         a llama2.c checkpoint's tokenizer.bin\n"
"      --chat-template FILE|NAME  the chat template: a Jinja file, or\n"
"                               tokstream (the built-in one), tinyllama,\n"
"                               chatml, llama3; default: the model's\n"
"                               own, else tokstream\n"
"      --model-threads N        compute threads, 0 = one per CPU (default 0)\n"
"      --model-context N        positions per sequence (KV cache), 0 = the\n"
"                               model's (llama2.c) or at most 4096 (GGUF,\n"
"                               Hugging Face) (default 0)\n"
"      --mode random|echo       random: the simulated model writes its own\n"
"                               answer; echo: it repeats the last user\n"
"                               message (default random)\n"
"      --reasoning always|request  always: every request thinks first, at\n"
"                               medium effort unless it names one (default\n"
"                               request: only those that ask)\n"
"      --reasoning-field reasoning|reasoning_content  the chat delta and\n"
"                               message field of the thinking (default\n"
"                               reasoning, vLLM's; reasoning_content:\n"
"                               DeepSeek's)\n"
"      --kv-cache-blocks N      prefix cache model: blocks of the KV cache,\n"
"                               0 = no prefix caching (default %u)\n"
"      --block-size N           tokens per KV cache block (default %u, vLLM's)\n"
"      --failure-injection-rate PCT  percent of /v1 requests that fail\n"
"                               (default 0)\n"
"      --failure-types LIST     the kinds drawn from, comma-separated:\n"
"                               rate_limit, server_error, overloaded,\n"
"                               context_length, invalid_api_key, timeout,\n"
"                               midstream_error, midstream_cut (default all\n"
"                               but timeout)\n"
"      --failure-after K        tokens before a midstream failure (default 5)\n"
"      --failure-seed N         seed of the failure draw (default 0)\n"
"      --allow-failure-header   honour a request's X-Tokstream-Failure\n"
"                               (default: refused, 400)\n"
"  -d, --state-dir DIR          state file directory (default %s)\n"
"      --procs N                responder processes that share the state\n"
"                               directory, 1 to %u (tokstream-ctl passes\n"
"                               TOKSTREAM_PROCS): the state file holds the\n"
"                               streams all of them may run (default 1)\n"
"  -s, --socket PATH            listen on this unix socket, not fd 0\n"
"  -b, --backlog N              listen backlog with --socket (default 1024)\n"
"  -l, --log FILE               append log lines to FILE (spawn-fcgi sends\n"
"                               stderr to /dev/null)\n"
"      --prefill-base-ms MS     prefill cost per request (default %.0f)\n"
"      --prefill-per-token-ms MS  prefill cost per prompt token (default %.2f)\n"
"      --tpot-ms MS             decode step time, TPOT (default %.0f)\n"
"      --keepalive-ms MS        SSE comment interval while silent, 0 = off\n"
"                               (default %.0f)\n"
"      --retry-ms MS            SSE retry sent at stream start: the client's\n"
"                               reconnection delay (default %d)\n"
"      --instance NAME          this backend's name among several hosts:\n"
"                               request ids become NAME-N (1 to 8 of a-z,\n"
"                               0-9, a letter first; default none)\n"
"      --metrics-prefix tokstream|vllm  GET /metrics' names: tokstream:*\n"
"                               (default), or vLLM's vllm:* and request\n"
"                               histograms; model_name on every series\n"
"      --replay TRACE           serve the responses a trace recorded (tokbench\n"
"                               record -o TRACE): a request that matches a\n"
"                               recorded one gets its bytes at its times\n"
"                               (docs/API.md \"Replay\"; sim backend only)\n"
"      --replay-speed X         recorded times divided by X, 0.01..1000\n"
"                               (default 1)\n"
"      --replay-miss 404|sim    a request to a recorded path that matches no\n"
"                               recording: 404 replay_miss (default), or\n"
"                               served by the simulator as without --replay\n"
"      --cors-origin ORIGIN     Access-Control-Allow-Origin of every answer\n"
"                               but those of /_debug/ and /metrics\n"
"                               (default *; \"\" = none)\n"
"  -t, --threads N              deprecated and ignored: streams no longer\n"
"                               hold a thread each (--max-num-seqs sizes\n"
"                               the server)\n"
"  -h, --help                   this text\n"
"  -V, --version                version\n",
	    ENGINE_DEFAULT_MAX_NUM_SEQS,
	    ENGINE_DEFAULT_MAX_WAITING, ENGINE_DEFAULT_LOAD_FACTOR,
	    engine_profile_preset_names(), OPTIONS_DEFAULT_WRITE_STALL_MS, OPTIONS_DEFAULT_ACCEPT_TIMEOUT_MS,
	    ENGINE_DEFAULT_KV_BLOCKS,
	    ENGINE_DEFAULT_BLOCK_SIZE, OPTIONS_DEFAULT_STATE_DIR,
	    OPTIONS_MAX_PROCS,
	    ENGINE_DEFAULT_PREFILL_BASE_MS,
	    ENGINE_DEFAULT_PREFILL_PER_TOKEN_MS, ENGINE_DEFAULT_TPOT_MS,
	    OPTIONS_DEFAULT_KEEPALIVE_MS, OPTIONS_DEFAULT_RETRY_MS);
}

/* Parses a number of ms in [0, max]; exits with a clear message if not. */
static double
parse_ms(const char *name, const char *s, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > max) {
		fprintf(stderr, "tokstream-fcgi: --%s must be a number of "
		    "milliseconds from 0 to %.0f, not '%s'\n", name, max, s);
		exit(2);
	}
	return v;
}

static int
parse_int(const char *name, const char *s, int min, int max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "tokstream-fcgi: --%s must be an integer from "
		    "%d to %d, not '%s'\n", name, min, max, s);
		exit(2);
	}
	return (int)v;
}

void
options_backend_args(const struct options *o, struct backend_args *a)
{
	a->model_path = o->model_path;
	a->tokenizer_path = o->tokenizer_path;
	a->threads = (uint32_t)o->model_threads;
	a->context = (uint32_t)o->model_context;
	a->max_batch = o->engine.max_num_seqs;
}

/*
 * The key in the first line of FILE (--api-key-file: the key stays out of
 * ps and /proc/PID/cmdline), without its line end. Exits 2 when the file
 * cannot be read or the line is no valid key. The string lives as long
 * as the process.
 */
static const char *
api_key_from_file(const char *path)
{
	static char key[AUTH_MAX_KEY_BYTES + 2];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "tokstream-fcgi: --api-key-file %s: %s\n", path,
		    strerror(errno));
		exit(2);
	}
	if (fgets(key, sizeof(key), f) == NULL)
		key[0] = '\0';
	fclose(f);
	n = strcspn(key, "\r\n");
	key[n] = '\0';
	if (auth_key_valid(key, n) != 0) {
		fprintf(stderr, "tokstream-fcgi: --api-key-file %s: the first "
		    "line must be the key, 1 to %d visible ASCII bytes (no "
		    "space)\n", path, AUTH_MAX_KEY_BYTES);
		exit(2);
	}
	return key;
}

/* Adds one --served-model-name; exits 2 on a bad or surplus name. */
static void
served_model_add(struct options *o, const char *name)
{
	int i;

	if (*name == '\0' || strlen(name) > 128) {
		fprintf(stderr, "tokstream-fcgi: a --served-model-name is 1 to "
		    "128 bytes\n");
		exit(2);
	}
	if (o->n_served_models == OPTIONS_MAX_SERVED_MODELS) {
		fprintf(stderr, "tokstream-fcgi: --served-model-name takes at "
		    "most %d names\n", OPTIONS_MAX_SERVED_MODELS);
		exit(2);
	}
	for (i = 0; i < o->n_served_models; i++)
		if (strcmp(o->served_models[i], name) == 0)
			return;         /* a repeated name is one name */
	o->served_models[o->n_served_models++] = name;
}

/* The latency knobs, as options_parse saw them. */
#define KNOB_PB 1u
#define KNOB_PT 2u
#define KNOB_TPOT 4u
#define KNOB_LOAD 8u
#define KNOB_JP 16u
#define KNOB_JT 32u
/* A profile file's largest size. */
#define PROFILE_MAX_BYTES (1 << 20)

/*
 * --latency-profile FILE|preset:NAME: the profile replaces the latency
 * model's parameters; the knobs given on the command line (`knobs`)
 * override its matching fields. Exits 2 with one line on any error.
 */
static void
profile_load(struct options *o, const char *arg, unsigned knobs)
{
	struct engine_latency knob = o->engine.lat, lat;
	double lf = o->engine.load_factor_max, plf;
	char err[512], *text = NULL;
	enum ts_err rc;

	if (strncmp(arg, "preset:", 7) == 0) {
		rc = engine_profile_preset(arg + 7, &lat, &plf, err,
		    sizeof(err));
	} else {
		FILE *f = fopen(arg, "rb");
		size_t n = 0;

		if (f == NULL) {
			fprintf(stderr, "tokstream-fcgi: --latency-profile "
			    "%s: %s\n", arg, strerror(errno));
			exit(2);
		}
		text = xmalloc(PROFILE_MAX_BYTES + 1);
		n = fread(text, 1, PROFILE_MAX_BYTES + 1, f);
		fclose(f);
		if (n > PROFILE_MAX_BYTES) {
			fprintf(stderr, "tokstream-fcgi: --latency-profile "
			    "%s: larger than %d bytes\n", arg,
			    PROFILE_MAX_BYTES);
			exit(2);
		}
		rc = engine_profile_parse(text, n, &lat, &plf, err,
		    sizeof(err));
		free(text);
	}
	if (rc != TS_OK) {
		fprintf(stderr, "tokstream-fcgi: --latency-profile %s: %s\n",
		    arg, err);
		exit(2);
	}
	if (knobs & KNOB_PB)
		lat.prefill_base_ms = knob.prefill_base_ms;
	if (knobs & KNOB_PT)
		lat.prefill_per_token_ms = knob.prefill_per_token_ms;
	if (knobs & KNOB_TPOT)
		lat.tpot_ms = knob.tpot_ms;
	if (knobs & KNOB_JP)
		lat.jitter_prefill = knob.jitter_prefill;
	if (knobs & KNOB_JT)
		lat.jitter_decode = knob.jitter_decode;
	if (knobs & KNOB_LOAD)
		plf = lf;
	o->engine.lat = lat;
	o->engine.load_factor_max = plf;
}

void
options_parse(struct options *o, int argc, char **argv)
{
	enum { O_PB = 256, O_PT, O_TPOT, O_KA, O_RETRY, O_CORS, O_SEQS,
	    O_WAIT, O_LOAD, O_JP, O_JT, O_SEED, O_STALL, O_NOCANCEL, O_BACKEND,
	    O_MODEL, O_TOKENIZER, O_MTHREADS, O_MCTX, O_SERVED, O_IOTHREADS,
	    O_APIKEY, O_APIKEYFILE, O_MODE, O_KVBLOCKS, O_BLOCKSIZE,
	    O_FRATE, O_FTYPES, O_FAFTER, O_FSEED, O_INSTANCE, O_OPENLAB,
	    O_FHEADER, O_PROCS, O_ACCEPTTO, O_MPREFIX, O_REASONING,
	    O_RFIELD, O_PROFILE, O_REPLAY, O_RSPEED, O_RMISS, O_CHATTPL };
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "io-threads", required_argument, NULL, O_IOTHREADS },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "procs", required_argument, NULL, O_PROCS },
		{ "socket", required_argument, NULL, 's' },
		{ "backlog", required_argument, NULL, 'b' },
		{ "log", required_argument, NULL, 'l' },
		{ "prefill-base-ms", required_argument, NULL, O_PB },
		{ "prefill-per-token-ms", required_argument, NULL, O_PT },
		{ "tpot-ms", required_argument, NULL, O_TPOT },
		{ "keepalive-ms", required_argument, NULL, O_KA },
		{ "retry-ms", required_argument, NULL, O_RETRY },
		{ "cors-origin", required_argument, NULL, O_CORS },
		{ "max-num-seqs", required_argument, NULL, O_SEQS },
		{ "max-waiting", required_argument, NULL, O_WAIT },
		{ "load-factor", required_argument, NULL, O_LOAD },
		{ "jitter-prefill-ms", required_argument, NULL, O_JP },
		{ "jitter-tpot-ms", required_argument, NULL, O_JT },
		{ "latency-profile", required_argument, NULL, O_PROFILE },
		{ "seed", required_argument, NULL, O_SEED },
		{ "write-stall-ms", required_argument, NULL, O_STALL },
		{ "accept-timeout-ms", required_argument, NULL, O_ACCEPTTO },
		{ "no-cancel", no_argument, NULL, O_NOCANCEL },
		{ "backend", required_argument, NULL, O_BACKEND },
		{ "served-model-name", required_argument, NULL, O_SERVED },
		{ "api-key", required_argument, NULL, O_APIKEY },
		{ "api-key-file", required_argument, NULL, O_APIKEYFILE },
		{ "open-lab-endpoints", no_argument, NULL, O_OPENLAB },
		{ "model", required_argument, NULL, O_MODEL },
		{ "tokenizer", required_argument, NULL, O_TOKENIZER },
		{ "chat-template", required_argument, NULL, O_CHATTPL },
		{ "model-threads", required_argument, NULL, O_MTHREADS },
		{ "model-context", required_argument, NULL, O_MCTX },
		{ "mode", required_argument, NULL, O_MODE },
		{ "instance", required_argument, NULL, O_INSTANCE },
		{ "kv-cache-blocks", required_argument, NULL, O_KVBLOCKS },
		{ "block-size", required_argument, NULL, O_BLOCKSIZE },
		{ "failure-injection-rate", required_argument, NULL, O_FRATE },
		{ "failure-types", required_argument, NULL, O_FTYPES },
		{ "failure-after", required_argument, NULL, O_FAFTER },
		{ "failure-seed", required_argument, NULL, O_FSEED },
		{ "allow-failure-header", no_argument, NULL, O_FHEADER },
		{ "metrics-prefix", required_argument, NULL, O_MPREFIX },
		{ "reasoning", required_argument, NULL, O_REASONING },
		{ "reasoning-field", required_argument, NULL, O_RFIELD },
		{ "replay", required_argument, NULL, O_REPLAY },
		{ "replay-speed", required_argument, NULL, O_RSPEED },
		{ "replay-miss", required_argument, NULL, O_RMISS },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	char msg[256];
	const char *profile = NULL;
	const char *replay_opt = NULL;   /* a --replay-* option given */
	unsigned knobs = 0;     /* the latency knobs given: KNOB_ bits */
	int ch;

	o->io_threads = 0;
	o->echo = 0;
	o->reasoning_always = 0;
	o->reasoning_field = "reasoning";
	o->instance = 0;
	o->instance_name = NULL;
	o->id_prefix[0] = '\0';
	inject_config_defaults(&o->inject);
	o->write_stall_ms = OPTIONS_DEFAULT_WRITE_STALL_MS;
	o->accept_timeout_ms = OPTIONS_DEFAULT_ACCEPT_TIMEOUT_MS;
	o->state_dir = OPTIONS_DEFAULT_STATE_DIR;
	o->procs = 1;
	o->socket_path = NULL;
	o->backlog = 1024;
	engine_config_defaults(&o->engine);
	o->retry_ms = OPTIONS_DEFAULT_RETRY_MS;
	o->keepalive_ms = OPTIONS_DEFAULT_KEEPALIVE_MS;
	o->cors_origin = "*";
	o->n_served_models = 0;
	o->api_key = NULL;
	o->open_lab = 0;
	o->allow_failure_header = 0;
	o->backend = "sim";
	o->metrics_prefix = "tokstream";
	o->replay_path = NULL;
	o->replay_speed = 1.0;
	o->replay_miss_sim = 0;
	while ((ch = getopt_long(argc, argv, "t:d:s:b:l:hV", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 't':
			(void)parse_int("threads", optarg, 1, 1 << 20);
			o->threads_given = 1;
			break;
		case O_IOTHREADS:
			o->io_threads = parse_int("io-threads", optarg, 0,
			    IO_MAX_THREADS);
			break;
		case 'd': o->state_dir = optarg; break;
		case O_PROCS:
			o->procs = (uint32_t)parse_int("procs", optarg, 1,
			    OPTIONS_MAX_PROCS);
			break;
		case 's': o->socket_path = optarg; break;
		case 'l': o->log_path = optarg; break;
		case 'b':
			o->backlog = parse_int("backlog", optarg, 1, 65535);
			break;
		case O_PB:
			knobs |= KNOB_PB;
			o->engine.lat.prefill_base_ms = parse_ms("prefill-base-ms",
			    optarg, HTTP_MAX_PREFILL_MS);
			break;
		case O_PT:
			knobs |= KNOB_PT;
			o->engine.lat.prefill_per_token_ms = parse_ms(
			    "prefill-per-token-ms", optarg, 1000);
			break;
		case O_TPOT:
			knobs |= KNOB_TPOT;
			o->engine.lat.tpot_ms = parse_ms("tpot-ms", optarg,
			    HTTP_MAX_TPOT_MS);
			break;
		case O_KA:
			o->keepalive_ms = parse_ms("keepalive-ms", optarg,
			    600000);
			break;
		case O_CORS:
			if (strpbrk(optarg, "\r\n") != NULL ||
			    strlen(optarg) > 256) {
				fprintf(stderr, "tokstream-fcgi: --cors-origin "
				    "must be one line of at most 256 bytes\n");
				exit(2);
			}
			o->cors_origin = optarg;
			break;
		case O_SEQS:
			o->engine.max_num_seqs = (uint32_t)parse_int(
			    "max-num-seqs", optarg, 1, ENGINE_MAX_SEQS);
			break;
		case O_WAIT:
			o->engine.max_waiting = (uint32_t)parse_int(
			    "max-waiting", optarg, 0, 65536);
			break;
		case O_LOAD:
			knobs |= KNOB_LOAD;
			o->engine.load_factor_max = parse_ms("load-factor",
			    optarg, 100);
			if (o->engine.load_factor_max < 1) {
				fprintf(stderr, "tokstream-fcgi: --load-factor "
				    "must be from 1 to 100\n");
				exit(2);
			}
			break;
		case O_JP:
			knobs |= KNOB_JP;
			o->engine.lat.jitter_prefill.std_ms = parse_ms(
			    "jitter-prefill-ms", optarg, 60000);
			break;
		case O_JT:
			knobs |= KNOB_JT;
			o->engine.lat.jitter_decode.std_ms = parse_ms("jitter-tpot-ms",
			    optarg, 60000);
			break;
		case O_SEED:
			o->engine.seed = (uint64_t)parse_int("seed", optarg,
			    0, INT_MAX);
			break;
		case O_STALL:
			o->write_stall_ms = parse_ms("write-stall-ms",
			    optarg, 3600000);
			break;
		case O_ACCEPTTO:
			o->accept_timeout_ms = parse_ms("accept-timeout-ms",
			    optarg, 600000);
			if (o->accept_timeout_ms < 100) {
				fprintf(stderr, "tokstream-fcgi: "
				    "--accept-timeout-ms must be from 100 to "
				    "600000\n");
				exit(2);
			}
			break;
		case O_PROFILE:
			profile = optarg;
			break;
		case O_NOCANCEL:
			o->engine.no_cancel = 1;
			break;
		case O_BACKEND:
			if (backends_find(optarg) == NULL) {
				fprintf(stderr, "tokstream-fcgi: --backend is "
				    "%s, not '%s'\n", backends_names(), optarg);
				exit(2);
			}
			o->backend = optarg;
			break;
		case O_MODEL: o->model_path = optarg; break;
		case O_APIKEY:
			if (auth_key_valid(optarg, strlen(optarg)) != 0) {
				fprintf(stderr, "tokstream-fcgi: --api-key is 1 "
				    "to %d visible ASCII bytes (no space)\n",
				    AUTH_MAX_KEY_BYTES);
				exit(2);
			}
			o->api_key = optarg;
			break;
		case O_APIKEYFILE:
			o->api_key = api_key_from_file(optarg);
			break;
		case O_OPENLAB:
			o->open_lab = 1;
			break;
		case O_MPREFIX:
			if (strcmp(optarg, "tokstream") != 0 &&
			    strcmp(optarg, "vllm") != 0) {
				fprintf(stderr, "tokstream-fcgi: --metrics-prefix "
				    "is tokstream or vllm, not '%s'\n", optarg);
				exit(2);
			}
			o->metrics_prefix = optarg;
			break;
		case O_FHEADER:
			o->allow_failure_header = 1;
			break;
		case O_SERVED:
			/* vLLM's form: one option, then names until the next
			 * option; the option may also repeat. */
			served_model_add(o, optarg);
			while (optind < argc && argv[optind][0] != '-')
				served_model_add(o, argv[optind++]);
			break;
		case O_TOKENIZER: o->tokenizer_path = optarg; break;
		case O_CHATTPL: o->chat_template = optarg; break;
		case O_MTHREADS:
			o->model_threads = parse_int("model-threads", optarg,
			    0, 256);
			break;
		case O_MCTX:
			o->model_context = parse_int("model-context", optarg,
			    0, 1 << 20);
			break;
		case O_RETRY:
			o->retry_ms = (unsigned long)parse_int("retry-ms",
			    optarg, 0, 3600000);
			break;
		case O_INSTANCE:
			if (resume_instance_parse(optarg, strlen(optarg),
			    &o->instance) != TS_OK) {
				fprintf(stderr, "tokstream-fcgi: --instance is 1 "
				    "to %d bytes of a-z and 0-9, the first a "
				    "letter (it starts every request id), not "
				    "'%s'\n", RESUME_INSTANCE_MAX, optarg);
				exit(2);
			}
			o->instance_name = optarg;
			snprintf(o->id_prefix, sizeof(o->id_prefix), "%s-",
			    optarg);
			break;
		case O_MODE:
			if (strcmp(optarg, "echo") != 0 &&
			    strcmp(optarg, "random") != 0) {
				fprintf(stderr, "tokstream-fcgi: --mode is random "
				    "or echo, not '%s'\n", optarg);
				exit(2);
			}
			o->echo = strcmp(optarg, "echo") == 0;
			break;
		case O_REASONING:
			if (strcmp(optarg, "always") != 0 &&
			    strcmp(optarg, "request") != 0) {
				fprintf(stderr, "tokstream-fcgi: --reasoning is "
				    "always or request, not '%s'\n", optarg);
				exit(2);
			}
			o->reasoning_always = strcmp(optarg, "always") == 0;
			break;
		case O_RFIELD:
			if (strcmp(optarg, "reasoning") != 0 &&
			    strcmp(optarg, "reasoning_content") != 0) {
				fprintf(stderr, "tokstream-fcgi: --reasoning-field "
				    "is reasoning or reasoning_content, not "
				    "'%s'\n", optarg);
				exit(2);
			}
			o->reasoning_field = optarg;
			break;
		case O_KVBLOCKS:
			o->engine.kv_blocks = (uint32_t)parse_int(
			    "kv-cache-blocks", optarg, 0, 1 << 24);
			break;
		case O_BLOCKSIZE:
			o->engine.kv_block_size = (uint32_t)parse_int(
			    "block-size", optarg, 1, 1024);
			break;
		case O_FRATE:
			if (inject_parse_rate(optarg, &o->inject.rate, msg,
			    sizeof(msg)) != TS_OK) {
				fprintf(stderr, "tokstream-fcgi: %s\n", msg);
				exit(2);
			}
			break;
		case O_FTYPES:
			if (inject_parse_types(optarg, &o->inject.types, msg,
			    sizeof(msg)) != TS_OK) {
				fprintf(stderr, "tokstream-fcgi: %s\n", msg);
				exit(2);
			}
			break;
		case O_FAFTER:
			o->inject.after_tokens = (uint32_t)parse_int(
			    "failure-after", optarg, 0, INJECT_MAX_AFTER);
			break;
		case O_FSEED:
			o->inject.seed = (uint64_t)parse_int("failure-seed",
			    optarg, 0, INT_MAX);
			break;
		case O_REPLAY:
			if (o->replay_path != NULL) {
				fprintf(stderr, "tokstream-fcgi: --replay given "
				    "twice (one trace a server)\n");
				exit(2);
			}
			o->replay_path = optarg;
			break;
		case O_RSPEED: {
			char *end;

			errno = 0;
			replay_opt = "--replay-speed";
			o->replay_speed = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    !(o->replay_speed >= 0.01) ||
			    o->replay_speed > 1000) {
				fprintf(stderr, "tokstream-fcgi: --replay-speed "
				    "must be a number from 0.01 to 1000, not "
				    "'%s'\n", optarg);
				exit(2);
			}
			break;
		}
		case O_RMISS:
			if (strcmp(optarg, "404") != 0 &&
			    strcmp(optarg, "sim") != 0) {
				fprintf(stderr, "tokstream-fcgi: --replay-miss "
				    "is 404 or sim, not '%s'\n", optarg);
				exit(2);
			}
			o->replay_miss_sim = strcmp(optarg, "sim") == 0;
			replay_opt = "--replay-miss";
			break;
		case 'h':
			options_usage(stdout);
			exit(0);
		case 'V':
			printf("tokstream-fcgi %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			options_usage(stderr);
			exit(2);
		}
	}
	if (profile != NULL && strcmp(o->backend, "sim") != 0) {
		fprintf(stderr, "tokstream-fcgi: --latency-profile is the "
		    "simulator's: the %s backend's steps take the time its "
		    "compute takes\n", o->backend);
		exit(2);
	}
	if (profile != NULL)
		profile_load(o, profile, knobs);
	if (o->replay_path == NULL && replay_opt != NULL) {
		fprintf(stderr, "tokstream-fcgi: %s needs --replay TRACE\n",
		    replay_opt);
		exit(2);
	}
	if (o->replay_path != NULL && strcmp(o->backend, "sim") != 0) {
		/* a replay's tokens are the simulator's ids it ignores; a real
		 * model would compute a whole forward pass per chunk */
		fprintf(stderr, "tokstream-fcgi: --replay needs --backend sim, "
		    "not %s (the recorded bytes need no model)\n", o->backend);
		exit(2);
	}
	{
		struct backend_args a;
		const char *why;

		options_backend_args(o, &a);
		why = backends_find(o->backend)->check(&a);
		if (why != NULL) {
			fprintf(stderr, "tokstream-fcgi: %s\n", why);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tokstream-fcgi: unexpected argument '%s'\n",
		    argv[optind]);
		exit(2);
	}
}

