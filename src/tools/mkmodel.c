/*
 * tools/mkmodel.c - tokstream-mkmodel: writes a model of seeded random
 * weights (model_synth.h) as a llama2.c checkpoint with its
 * tokenizer.bin, a GGUF file or a Hugging Face folder (model_export.h),
 * to try the llama backend, test it and benchmark it without a download.
 *
 * Exit status: 0 written, 1 a file could not be written, 2 bad
 * arguments (one line on stderr says which).
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ftw.h>
#include <unistd.h>

#include "backend/backend.h"
#include "model/dtype.h"
#include "model/model.h"
#include "model/model_export.h"
#include "model/model_synth.h"
#include "model/quant.h"
#include "common/ts.h"

#define MKMODEL_EXIT_FAIL 1
#define MKMODEL_EXIT_USAGE 2

static void
mkmodel_usage(FILE *f)
{
	fputs("usage: tokstream-mkmodel --out-model FILE "
	    "--out-tokenizer FILE  (llama2.c)\n"
	    "       tokstream-mkmodel --format gguf|hf --out PATH "
	    "[--type T]\n"
	    "           [--dim N] [--hidden-dim N] [--layers N] [--heads N]\n"
	    "           [--kv-heads N] [--vocab N] [--seq-len N] [--seed N]\n"
	    "           [--shared-classifier] [--rope-theta X]\n"
	    "           [--chat-template FILE|tinyllama|none] [--name NAME]\n"
	    "           [--temperature X] [--top-p X] [--top-k N]\n"
	    "           [--shard-bytes N] [--tokenizer-json FILE [--pre NAME]\n"
	    "            [--bos TEXT] [--eos TEXT]...]\n"
	    "\n"
	    "Writes a Llama-2 style model of seeded random weights: in\n"
	    "llama2.c's checkpoint format (legacy version 0) with a\n"
	    "tokenizer.bin, or the same weights and vocabulary as a GGUF\n"
	    "file or a Hugging Face folder (config.json, safetensors,\n"
	    "tokenizer.json, tokenizer_config.json with the chat template,\n"
	    "generation_config.json). The text it makes is gibberish; its\n"
	    "speed and memory traffic are a real model's.\n"
	    "\n"
	    "  --format F           llama2c (default), gguf or hf\n"
	    "  --out PATH           the GGUF file or the folder to write\n"
	    "  --type T             weights: f32 (default), f16, bf16, q8_0,\n"
	    "                       q4_0, q4_K, q6_K (GGUF: q8_0 and q4_0\n"
	    "                       need --dim and --hidden-dim multiples of\n"
	    "                       32, e.g. --hidden-dim 192; q4_K and q6_K\n"
	    "                       multiples of 256); hf: f32, f16, bf16\n"
	    "  --chat-template T    a Jinja file, tinyllama (default: the\n"
	    "                       TinyLlama chat template) or none\n"
	    "  --name NAME          GGUF general.name (the served name)\n"
	    "  --temperature X, --top-p X, --top-k N  sampling defaults\n"
	    "                       written into the model (default none)\n"
	    "  --shard-bytes N      hf: safetensors shards of at most N bytes\n"
	    "  --rope-theta X       RoPE base (gguf, hf; default 10000)\n"
	    "  --tokenizer-json F   a byte-level BPE tokenizer.json instead of\n"
	    "                       the synthetic vocabulary (gguf: tokenizer\n"
	    "                       gpt2; hf: the file); the vocabulary is\n"
	    "                       its size; with --pre NAME (GGUF\n"
	    "                       tokenizer.ggml.pre, default llama-bpe),\n"
	    "                       --bos TEXT and up to three --eos TEXT\n"
	    "                       (eos, eot, eom: the EOS list)\n"
	    "\n"
	    "  --dim N              model width (default 64)\n"
	    "  --hidden-dim N       FFN width (default 172)\n"
	    "  --layers N           default 2\n"
	    "  --heads N            query heads (default 4)\n"
	    "  --kv-heads N         key/value heads, dividing --heads\n"
	    "                       (default 2)\n"
	    "  --vocab N            vocabulary, at least 354 (default 512)\n"
	    "  --seq-len N          longest sequence (default 256)\n"
	    "  --seed N             weights' seed (default 1)\n"
	    "  --shared-classifier  use the embedding table as the\n"
	    "                       classifier (default: a separate one,\n"
	    "                       vocab_size < 0 in the header; its text\n"
	    "                       repeats less)\n"
	    "  -h, --help           this text\n", f);
}

/* A decimal number in [lo, hi], or a message on stderr and -1. */
static int
mkmodel_num(const char *name, const char *s, uint64_t lo, uint64_t hi,
    uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	if (s[0] < '0' || s[0] > '9') {
		fprintf(stderr, "tokstream-mkmodel: %s: not a number: %s\n",
		    name, s);
		return -1;
	}
	x = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || x < lo || x > hi) {
		fprintf(stderr, "tokstream-mkmodel: %s must be %" PRIu64
		    "..%" PRIu64 ": %s\n", name, lo, hi, s);
		return -1;
	}
	*v = x;
	return 0;
}

/* --type's name to a type */
static int
mkmodel_type(const char *s, uint32_t *t)
{
	static const uint32_t types[] = { MODEL_DTYPE_F32, MODEL_DTYPE_F16,
		MODEL_DTYPE_BF16, MODEL_DTYPE_Q8_0, MODEL_DTYPE_Q4_0,
		MODEL_DTYPE_Q4_K, MODEL_DTYPE_Q6_K };
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcasecmp(s, model_dtype_name(types[i])) == 0 &&
		    (types[i] == MODEL_DTYPE_F32 || quant_supported(types[i]))) {
			*t = types[i];
			return 0;
		}
	fprintf(stderr, "tokstream-mkmodel: --type must be one of f32, f16, "
	    "bf16, q8_0, q4_0%s: %s\n", quant_supported(MODEL_DTYPE_Q4_K) ?
	    ", q4_K, q6_K" : "", s);
	return -1;
}

static const char *
longopts_name(int ch)
{
	return ch == 'e' ? "--temperature" : ch == 'p' ? "--top-p" :
	    "--rope-theta";
}

/* A decimal in [0, hi] (rope theta: above 0), or a message and -1. */
static int
mkmodel_real(const char *name, const char *s, double hi, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	/* top_p and the RoPE base are above 0 (top_p in (0, 1], as the
	 * server takes it) */
	if (errno != 0 || end == s || *end != '\0' || !(*v >= 0.0) ||
	    *v > hi || (strcmp(name, "--temperature") != 0 && *v <= 0.0)) {
		fprintf(stderr, "tokstream-mkmodel: %s must be a number in "
		    "%s%g]: %s\n", name, strcmp(name, "--temperature") != 0 ?
		    "(0, " : "[0, ", hi, s);
		return -1;
	}
	return 0;
}

static int
rm_entry(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	(void)sb;
	(void)type;
	(void)f;
	return remove(path);
}

/* Reads a --chat-template file (at most 1 MiB) into a malloc'd string. */
static char *
mkmodel_template(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *p;
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "tokstream-mkmodel: --chat-template %s: %s "
		    "(a Jinja file, tinyllama or none)\n", path,
		    strerror(errno));
		return NULL;
	}
	p = xmalloc((1u << 20) + 1);
	n = fread(p, 1, 1u << 20, f);
	fclose(f);
	p[n] = '\0';
	return p;
}

/*
 * --format gguf|hf: the llama2.c files in a temporary folder, opened,
 * then written in the format asked for with the same weights.
 */
static int
mkmodel_export(const struct model_synth *s, const char *format,
    const char *out, const char *tpl, struct model_export *x,
    double rope_theta)
{
	char mpath[4200], tpath[4200], err[512], *tfile = NULL;
	struct model *m = NULL;
	struct model_config c = s->cfg;
	const char *tmpdir = getenv("TMPDIR");
	char dirbuf[4096];
	enum ts_err rc;
	int status = MKMODEL_EXIT_FAIL;

	if (out == NULL) {
		fprintf(stderr, "tokstream-mkmodel: --format %s needs --out "
		    "PATH\n", format);
		return MKMODEL_EXIT_USAGE;
	}
	if (model_config_check(&c, err, sizeof(err)) != TS_OK) {
		fprintf(stderr, "tokstream-mkmodel: %s\n", err);
		return MKMODEL_EXIT_USAGE;
	}
	if (c.vocab_size < MODEL_SYNTH_MIN_VOCAB) {
		fprintf(stderr, "tokstream-mkmodel: --vocab must be at least "
		    "%u\n", MODEL_SYNTH_MIN_VOCAB);
		return MKMODEL_EXIT_USAGE;
	}
	if (strcmp(tpl, "tinyllama") == 0)
		x->chat_template = MODEL_EXPORT_TEMPLATE_TINYLLAMA;
	else if (strcmp(tpl, "none") == 0)
		x->chat_template = NULL;
	else if ((x->chat_template = tfile = mkmodel_template(tpl)) == NULL)
		return MKMODEL_EXIT_USAGE;
	snprintf(dirbuf, sizeof(dirbuf), "%s/tokstream-mkmodel.XXXXXX",
	    tmpdir != NULL && tmpdir[0] != '\0' ? tmpdir : "/tmp");
	if (mkdtemp(dirbuf) == NULL) {
		fprintf(stderr, "tokstream-mkmodel: cannot make a temporary "
		    "folder: %s\n", strerror(errno));
		free(tfile);
		return MKMODEL_EXIT_FAIL;
	}
	snprintf(mpath, sizeof(mpath), "%s/m.bin", dirbuf);
	snprintf(tpath, sizeof(tpath), "%s/t.bin", dirbuf);
	if (model_synth_write_checkpoint(s, mpath, err, sizeof(err)) !=
	    TS_OK || model_synth_write_tokenizer(s, tpath, err,
	    sizeof(err)) != TS_OK || model_open(&m, mpath, err,
	    sizeof(err)) != TS_OK) {
		fprintf(stderr, "tokstream-mkmodel: %s\n", err);
		goto out;
	}
	if (rope_theta > 0.0)
		m->cfg.rope_theta = (float)rope_theta;
	rc = strcmp(format, "gguf") == 0 ?
	    model_export_gguf(m, tpath, x, out, err, sizeof(err)) :
	    model_export_hf(m, tpath, x, out, err, sizeof(err));
	if (rc != TS_OK) {
		fprintf(stderr, "tokstream-mkmodel: %s\n", err);
		status = rc == TS_EINVAL ? MKMODEL_EXIT_USAGE :
		    MKMODEL_EXIT_FAIL;
		goto out;
	}
	printf("%s: %s %s, %" PRIu64 " parameters\n", out, format,
	    model_dtype_name(x->type), model_param_count(&c));
	status = 0;
out:
	model_close(m);
	free(tfile);
	(void)nftw(dirbuf, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	return status;
}

int
main(int argc, char **argv)
{
	/* options 0..6 set the header's fields, in this order */
	static const struct option longopts[] = {
		{ "dim", required_argument, NULL, 0 },
		{ "hidden-dim", required_argument, NULL, 1 },
		{ "layers", required_argument, NULL, 2 },
		{ "heads", required_argument, NULL, 3 },
		{ "kv-heads", required_argument, NULL, 4 },
		{ "vocab", required_argument, NULL, 5 },
		{ "seq-len", required_argument, NULL, 6 },
		{ "seed", required_argument, NULL, 'S' },
		{ "shared-classifier", no_argument, NULL, 'C' },
		{ "out-model", required_argument, NULL, 'm' },
		{ "out-tokenizer", required_argument, NULL, 't' },
		{ "format", required_argument, NULL, 'F' },
		{ "out", required_argument, NULL, 'o' },
		{ "type", required_argument, NULL, 'T' },
		{ "chat-template", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "temperature", required_argument, NULL, 'e' },
		{ "top-p", required_argument, NULL, 'p' },
		{ "top-k", required_argument, NULL, 'k' },
		{ "shard-bytes", required_argument, NULL, 'b' },
		{ "rope-theta", required_argument, NULL, 'r' },
		{ "tokenizer-json", required_argument, NULL, 'J' },
		{ "pre", required_argument, NULL, 'P' },
		{ "bos", required_argument, NULL, 'B' },
		{ "eos", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const uint32_t max[7] = { MODEL_MAX_DIM, MODEL_MAX_HIDDEN,
		MODEL_MAX_LAYERS, MODEL_MAX_HEADS, MODEL_MAX_HEADS,
		MODEL_MAX_VOCAB, MODEL_MAX_SEQ_LEN };
	struct model_synth s;
	struct model_config c;
	uint32_t *field[7];
	const char *out_model = NULL, *out_tok = NULL, *format = "llama2c";
	const char *out = NULL, *tpl = "tinyllama";
	struct model_export x;
	static const char *eos[3];
	double rope_theta = 0.0;
	char err[512], name[32];
	uint64_t v;
	int ch;

	model_synth_defaults(&s);
	memset(&x, 0, sizeof(x));
	x.type = MODEL_DTYPE_F32;
	field[0] = &s.cfg.dim;
	field[1] = &s.cfg.hidden_dim;
	field[2] = &s.cfg.n_layers;
	field[3] = &s.cfg.n_heads;
	field[4] = &s.cfg.n_kv_heads;
	field[5] = &s.cfg.vocab_size;
	field[6] = &s.cfg.seq_len;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case 0: case 1: case 2: case 3: case 4: case 5: case 6:
			snprintf(name, sizeof(name), "--%s",
			    longopts[ch].name);
			if (mkmodel_num(name, optarg, 1, max[ch], &v) != 0)
				return MKMODEL_EXIT_USAGE;
			*field[ch] = (uint32_t)v;
			break;
		case 'S':
			if (mkmodel_num("--seed", optarg, 0, UINT64_MAX,
			    &s.seed) != 0)
				return MKMODEL_EXIT_USAGE;
			break;
		case 'C':
			s.cfg.shared_classifier = 1;
			break;
		case 'm':
			out_model = optarg;
			break;
		case 't':
			out_tok = optarg;
			break;
		case 'F':
			format = optarg;
			if (strcmp(format, "llama2c") != 0 &&
			    strcmp(format, "gguf") != 0 &&
			    strcmp(format, "hf") != 0) {
				fprintf(stderr, "tokstream-mkmodel: --format "
				    "must be llama2c, gguf or hf: %s\n",
				    optarg);
				return MKMODEL_EXIT_USAGE;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'T':
			if (mkmodel_type(optarg, &x.type) != 0)
				return MKMODEL_EXIT_USAGE;
			break;
		case 'c':
			tpl = optarg;
			break;
		case 'n':
			x.name = optarg;
			break;
		case 'e': case 'p': case 'r':
			if (mkmodel_real(longopts_name(ch), optarg,
			    ch == 'e' ? 2.0 : ch == 'p' ? 1.0 : 1e9,
			    ch == 'e' ? &x.temperature : ch == 'p' ?
			    &x.top_p : &rope_theta) != 0)
				return MKMODEL_EXIT_USAGE;
			x.gen_has |= ch == 'e' ? ENGINE_GIVEN_TEMPERATURE :
			    ch == 'p' ? ENGINE_GIVEN_TOP_P : 0;
			break;
		case 'k':
			if (mkmodel_num("--top-k", optarg, 0, 1000000, &v) !=
			    0)
				return MKMODEL_EXIT_USAGE;
			x.top_k = (uint32_t)v;
			x.gen_has |= ENGINE_GIVEN_TOP_K;
			break;
		case 'b':
			if (mkmodel_num("--shard-bytes", optarg, 1,
			    UINT64_MAX, &x.max_shard_bytes) != 0)
				return MKMODEL_EXIT_USAGE;
			break;
		case 'J':
			x.tokenizer_json = optarg;
			break;
		case 'P':
			x.pre = optarg;
			break;
		case 'B':
			x.bos = optarg;
			break;
		case 'E':
			if (x.n_eos == 3) {
				fprintf(stderr, "tokstream-mkmodel: at most three "
				    "--eos (eos, eot, eom)\n");
				return MKMODEL_EXIT_USAGE;
			}
			eos[x.n_eos++] = optarg;
			x.eos = eos;
			break;
		case 'h':
			mkmodel_usage(stdout);
			return 0;
		case ':':
			fprintf(stderr, "tokstream-mkmodel: %s needs a "
			    "value\n", argv[optind - 1]);
			return MKMODEL_EXIT_USAGE;
		default:
			fprintf(stderr, "tokstream-mkmodel: unknown option "
			    "%s (--help)\n", argv[optind - 1]);
			return MKMODEL_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tokstream-mkmodel: unexpected argument %s\n",
		    argv[optind]);
		return MKMODEL_EXIT_USAGE;
	}
	if (x.tokenizer_json != NULL) {
		if (strcmp(format, "llama2c") == 0) {
			fprintf(stderr, "tokstream-mkmodel: --tokenizer-json goes "
			    "with --format gguf or hf\n");
			return MKMODEL_EXIT_USAGE;
		}
		s.cfg.vocab_size = model_export_json_tokens(x.tokenizer_json,
		    err, sizeof(err));
		if (s.cfg.vocab_size == 0) {
			fprintf(stderr, "tokstream-mkmodel: %s\n", err);
			return MKMODEL_EXIT_USAGE;
		}
		if (s.cfg.vocab_size < MODEL_SYNTH_MIN_VOCAB)
			s.cfg.vocab_size = MODEL_SYNTH_MIN_VOCAB;
	} else if (x.pre != NULL || x.bos != NULL || x.n_eos > 0) {
		fprintf(stderr, "tokstream-mkmodel: --pre, --bos and --eos go "
		    "with --tokenizer-json\n");
		return MKMODEL_EXIT_USAGE;
	}
	if (x.max_shard_bytes > 0 && strcmp(format, "hf") != 0) {
		fprintf(stderr, "tokstream-mkmodel: --shard-bytes goes with "
		    "--format hf\n");
		return MKMODEL_EXIT_USAGE;
	}
	if (strcmp(format, "llama2c") != 0)
		return mkmodel_export(&s, format, out, tpl, &x, rope_theta);
	if (out_model == NULL || out_tok == NULL) {
		fprintf(stderr, "tokstream-mkmodel: --out-model and "
		    "--out-tokenizer are required (--help)\n");
		return MKMODEL_EXIT_USAGE;
	}
	if (out != NULL || x.type != MODEL_DTYPE_F32 || x.gen_has != 0 ||
	    rope_theta != 0.0) {
		fprintf(stderr, "tokstream-mkmodel: --out, --type, "
		    "--rope-theta and the sampling defaults go with --format "
		    "gguf or hf\n");
		return MKMODEL_EXIT_USAGE;
	}
	c = s.cfg;
	if (model_config_check(&c, err, sizeof(err)) != TS_OK) {
		fprintf(stderr, "tokstream-mkmodel: %s\n", err);
		return MKMODEL_EXIT_USAGE;
	}
	if (c.vocab_size < MODEL_SYNTH_MIN_VOCAB) {
		fprintf(stderr, "tokstream-mkmodel: --vocab must be at least "
		    "%u\n", MODEL_SYNTH_MIN_VOCAB);
		return MKMODEL_EXIT_USAGE;
	}
	if (model_synth_write_checkpoint(&s, out_model, err, sizeof(err)) !=
	    TS_OK || model_synth_write_tokenizer(&s, out_tok, err,
	    sizeof(err)) != TS_OK) {
		fprintf(stderr, "tokstream-mkmodel: %s\n", err);
		return MKMODEL_EXIT_FAIL;
	}
	printf("%s: %" PRIu64 " parameters, %" PRIu64 " bytes\n", out_model,
	    model_param_count(&c), model_file_bytes(&c));
	return 0;
}
