/*
 * fuzz_hf_files.c - the parsers of a Hugging Face model folder on
 * arbitrary bytes: safetensors_parse (a safetensors image), and the
 * input as the text of config.json, generation_config.json and
 * tokenizer_config.json (src/model/safetensors.c, hf.c); then the RoPE
 * row permutation on the input as F16 rows.
 *
 * Properties, each checked with abort():
 *  - no parser reads outside the input (the driver gives an allocation
 *    of exactly its size; the sanitizer build catches it) or crashes; a
 *    refusal comes with a non-empty message and no object;
 *  - an accepted safetensors image: its tensors, in offset order, tile
 *    the bytes after the header exactly (README "Format": entirely
 *    indexed, no holes), each has bytes = shape's product x element
 *    size and data inside the image, and is found by its name; every
 *    element converts to float;
 *  - an accepted config: head_dim x heads = hidden_size, the kv heads
 *    divide the heads, at most 16 eos ids; an accepted generation
 *    config's temperature >= 0 and top_p in [0, 1];
 *  - unpermute then permute gives the rows back.
 */
#include <string.h>

#include "fuzz.h"
#include "model/hf.h"
#include "model/safetensors.h"

static void
check_safetensors(const uint8_t *data, size_t size)
{
	struct safetensors *st = NULL;
	const struct st_tensor *t;
	char err[512];
	uint64_t hlen = 0, pos;
	enum ts_err rc;
	size_t i;

	err[0] = '\0';
	rc = safetensors_parse(&st, data, size, err, sizeof(err));
	if (rc != TS_OK) {
		FUZZ_CHECK(err[0] != '\0');
		FUZZ_CHECK(st == NULL);
		return;
	}
	FUZZ_CHECK(size >= 8);
	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)data[i] << (8 * i);
	pos = 8 + hlen;
	for (i = 0; i < safetensors_count(st); i++) {
		float f[16];
		uint64_t done;

		t = safetensors_at(st, i);
		FUZZ_CHECK(t->offset == pos);
		FUZZ_CHECK(t->n_dims <= ST_MAX_DIMS);
		FUZZ_CHECK(t->bytes == st_tensor_bytes(t->dtype, t->n_dims,
		    t->shape) || (t->bytes == 0 && t->n_elems == 0));
		FUZZ_CHECK((const uint8_t *)t->data == data + t->offset);
		FUZZ_CHECK(t->offset + t->bytes <= size);
		FUZZ_CHECK(safetensors_find(st, t->name) == t);
		for (done = 0; done < t->n_elems; done += 16) {
			uint64_t n = t->n_elems - done < 16 ?
			    t->n_elems - done : 16;

			st_to_f32(t->dtype, (const uint8_t *)t->data +
			    done * (t->bytes / t->n_elems), n, f);
		}
		pos += t->bytes;
	}
	FUZZ_CHECK(pos == size);
	safetensors_close(st);
}

static void
check_configs(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct hf_config c;
	struct hf_generation g;
	struct hf_tokenizer_config t;
	char err[512];

	err[0] = '\0';
	if (hf_config_parse(&c, text, size, err, sizeof(err)) == TS_OK) {
		FUZZ_CHECK(c.head_dim * c.num_attention_heads ==
		    c.hidden_size);
		FUZZ_CHECK(c.num_key_value_heads > 0 &&
		    c.num_attention_heads % c.num_key_value_heads == 0);
		FUZZ_CHECK(c.n_eos <= HF_MAX_EOS);
	} else {
		FUZZ_CHECK(err[0] != '\0');
	}
	err[0] = '\0';
	if (hf_generation_parse(&g, text, size, err, sizeof(err)) == TS_OK) {
		FUZZ_CHECK(!g.has_temperature || g.temperature >= 0);
		FUZZ_CHECK(!g.has_top_p || (g.top_p >= 0 && g.top_p <= 1));
		FUZZ_CHECK(g.n_eos <= HF_MAX_EOS);
	} else {
		FUZZ_CHECK(err[0] != '\0');
	}
	err[0] = '\0';
	if (hf_tokenizer_config_parse(&t, text, size, err, sizeof(err)) !=
	    TS_OK) {
		FUZZ_CHECK(err[0] != '\0');
		FUZZ_CHECK(t.chat_template == NULL && t.bos_token == NULL &&
		    t.eos_token == NULL);
	}
	hf_tokenizer_config_free(&t);
}

static void
check_permutation(const uint8_t *data, size_t size)
{
	uint32_t n_head = size > 0 ? (uint32_t)(data[0] % 4) + 1 : 1;
	uint64_t rows, cols = 3;
	uint8_t *a, *b;

	rows = size / (2 * cols) / (2 * n_head) * (2 * n_head);
	if (rows == 0)
		return;
	a = malloc(rows * cols * 2);
	b = malloc(rows * cols * 2);
	FUZZ_CHECK(hf_unpermute_rows(data, a, MODEL_DTYPE_F16, n_head, rows,
	    cols) == TS_OK);
	FUZZ_CHECK(hf_permute_rows(a, b, MODEL_DTYPE_F16, n_head, rows,
	    cols) == TS_OK);
	FUZZ_CHECK(memcmp(b, data, rows * cols * 2) == 0);
	free(a);
	free(b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_safetensors(data, size);
	check_configs(data, size);
	check_permutation(data, size);
	return 0;
}
