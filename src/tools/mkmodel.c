/*
 * tools/mkmodel.c - tokstream-mkmodel: writes a llama2.c checkpoint of seeded
 * random weights and a matching tokenizer.bin (model_synth.h), to try
 * the llama backend, test it and benchmark it without a download.
 *
 * Exit status: 0 written, 1 a file could not be written, 2 bad
 * arguments (one line on stderr says which).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_synth.h"
#include "common/ts.h"

#define MKMODEL_EXIT_FAIL 1
#define MKMODEL_EXIT_USAGE 2

static void
mkmodel_usage(FILE *f)
{
	fputs("usage: tokstream-mkmodel --out-model FILE "
	    "--out-tokenizer FILE\n"
	    "           [--dim N] [--hidden-dim N] [--layers N] [--heads N]\n"
	    "           [--kv-heads N] [--vocab N] [--seq-len N] [--seed N]\n"
	    "           [--shared-classifier]\n"
	    "\n"
	    "Writes a Llama-2 style model of seeded random weights in\n"
	    "llama2.c's checkpoint format (legacy version 0) and a tokenizer\n"
	    "for it in llama2.c's tokenizer.bin format. The text it makes\n"
	    "is gibberish; its speed and memory traffic are a real model's.\n"
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const uint32_t max[7] = { MODEL_MAX_DIM, MODEL_MAX_HIDDEN,
		MODEL_MAX_LAYERS, MODEL_MAX_HEADS, MODEL_MAX_HEADS,
		MODEL_MAX_VOCAB, MODEL_MAX_SEQ_LEN };
	struct model_synth s;
	struct model_config c;
	uint32_t *field[7];
	const char *out_model = NULL, *out_tok = NULL;
	char err[512], name[32];
	uint64_t v;
	int ch;

	model_synth_defaults(&s);
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
	if (out_model == NULL || out_tok == NULL) {
		fprintf(stderr, "tokstream-mkmodel: --out-model and "
		    "--out-tokenizer are required (--help)\n");
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
