/*
 * handlers/settings.h - tokstream-fcgi's settings (struct options) from
 * its command line (docs/OPERATIONS.md "Responder options"): the
 * engine's (slots, queue, latency model) and the server's own (socket,
 * state directory, SSE keep-alive and retry, CORS, the backend and its
 * files). The handlers read them; server/options.h fills them from argv.
 */
#ifndef TS_HANDLERS_SETTINGS_H
#define TS_HANDLERS_SETTINGS_H

#include "engine/engine.h"
#include "handlers/inject.h"

#define OPTIONS_DEFAULT_STATE_DIR "/run/tokstream"
#define OPTIONS_DEFAULT_RETRY_MS 1000
#define OPTIONS_DEFAULT_KEEPALIVE_MS 1000.0
#define OPTIONS_DEFAULT_WRITE_STALL_MS 30000.0
#define OPTIONS_DEFAULT_ACCEPT_TIMEOUT_MS 5000.0

/* --procs: responder processes sharing a state directory, at most (as
 * many as the metrics file has process slots, stores/metrics.h). */
#define OPTIONS_MAX_PROCS 128u

/* --served-model-name takes up to this many names. */
#define OPTIONS_MAX_SERVED_MODELS 16

struct options {
	int io_threads;              /* 0: one per online CPU */
	int threads_given;           /* the deprecated --threads was given:
				      * main warns once the log is open */
	double write_stall_ms;       /* a stream whose client has taken no
				      * byte this long is cancelled; 0 =
				      * never */
	double accept_timeout_ms;    /* a FastCGI connection has this long
				      * to send its whole request, and an
				      * accept thread's reads and writes on
				      * it this long from its taking it
				      * (transport/gate.h) */
	const char *state_dir;
	uint32_t procs;              /* --procs: responder processes sharing
				      * state_dir (sizes the state file) */
	const char *socket_path;     /* NULL: listen on fd 0 (spawn-fcgi) */
	const char *log_path;        /* NULL: stderr as inherited */
	int backlog;
	struct engine_config engine; /* latency model, slots, queue */
	double keepalive_ms;         /* SSE comment interval while silent;
				      * 0 = none */
	unsigned long retry_ms;      /* SSE retry: sent at stream start */
	const char *cors_origin;     /* Access-Control-Allow-Origin; "" = off */
	/* --served-model-name: the names the /v1 endpoints answer to, the
	 * first one in every response's "model" (as vLLM); none given: the
	 * backend's model name */
	const char *served_models[OPTIONS_MAX_SERVED_MODELS];
	int n_served_models;
	/* --api-key / --api-key-file: the key every request that generates
	 * (/v1, and the lab's /stream and /generate unless open_lab) must
	 * send as "Authorization: Bearer KEY"; NULL: no key (the default) */
	const char *api_key;
	int open_lab;                /* --open-lab-endpoints: /stream and
				      * /generate need no key even with
				      * api_key; default 0 */
	int allow_failure_header;    /* --allow-failure-header: honour
				      * X-Tokstream-Failure; default 0: a
				      * request carrying it is a 400 */
	const char *backend;         /* "sim" or "llama" */
	const char *model_path;      /* llama2.c checkpoint (--backend llama) */
	const char *tokenizer_path;  /* llama2.c tokenizer.bin */
	const char *chat_template;   /* --chat-template FILE|tokstream, or
				      * NULL: the model's own */
	int model_threads;           /* compute threads, 0 = online CPUs */
	int model_context;           /* positions per sequence, 0 = model's */
	int echo;                    /* --mode echo: answers repeat the last
				      * user message (llm-d-inference-sim's
				      * echo mode); 0: --mode random */
	struct inject_config inject; /* --failure-*: failure injection */
	/* --instance NAME: this backend's name among several hosts, the
	 * prefix of every request id ("b1-42"; docs/OPERATIONS.md "Several
	 * hosts"); packed as resume.h's instance names, 0 = none */
	uint64_t instance;
	const char *instance_name;   /* NULL when unnamed */
	/* --metrics-prefix: "tokstream" (the default) or "vllm", the names
	 * and labels of GET /metrics (stores/metrics.h, struct
	 * metrics_dialect) */
	const char *metrics_prefix;
	char id_prefix[16];          /* "NAME-", or "" when unnamed */
	/* --reasoning always: every request thinks first (text/think.h:
	 * THINK_DEFAULT_EFFORT unless it names an effort or disables
	 * thinking); 0: only those that ask (the default) */
	int reasoning_always;
	/* --reasoning-field: chat's thinking field, "reasoning" (the
	 * default, vLLM's) or "reasoning_content" (DeepSeek's) */
	const char *reasoning_field;
	/* --replay TRACE: serve the trace's recorded responses
	 * (handlers/replay.h); NULL: off. --replay-speed: recorded times
	 * are divided by it (> 0, default 1). --replay-miss sim: a request
	 * with no recording is served as without --replay; 0 (the
	 * default, 404): it gets 404 replay_miss */
	const char *replay_path;
	double replay_speed;
	int replay_miss_sim;
};

#endif /* TS_HANDLERS_SETTINGS_H */
