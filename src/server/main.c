/*
 * server/main.c - tokstream-fcgi: reads its options, opens the state and
 * metrics files, the backend and the engine, starts the I/O and accept threads
 * (fcgi.c) and waits for a stop signal. docs/ARCHITECTURE.md draws how a
 * request travels from here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "server/backends.h"
#include "server/chat_model.h"
#include "model/llama.h"
#include "model/model_file.h"
#include "config.h"
#include "engine/engine.h"
#include "server/fcgi.h"
#include "transport/io.h"
#include "stores/metrics.h"
#include "server/options.h"
#include "engine/profile.h"
#include "handlers/record.h"
#include "handlers/replay.h"
#include "transport/relay.h"
#include "handlers/server.h"
#include "stores/state.h"

#define SHUTDOWN_GRACE_MS 5000
/* Accept threads: a request's handler is quick (parse, queue, the head),
 * so a few keep /health and every new request answered however many
 * streams run. */
#define ACCEPT_THREADS 4
/* And one more that takes only requests without a body: /health,
 * /metrics, /v1/models, /_debug and /stream, which a few POSTs whose
 * parsing takes their whole step budget would otherwise queue behind
 * (docs/RELIABILITY.md "The accept path"). */
#define ACCEPT_LIGHT_THREADS 1

static struct options opt;
static struct server srv;
static struct record_ctx records;
static struct engine_backend backend;

/* stderr to --log FILE (spawn-fcgi sends it to /dev/null). */
static int
open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
		fprintf(stderr, "tokstream-fcgi: cannot open log %s: %s\n",
		    path, strerror(errno));
		return -1;
	}
	close(fd);
	setvbuf(stderr, NULL, _IOLBF, 0);
	return 0;
}

/* The state and metrics files; a read-only or full disk must not stop
 * the service: count in memory, and say so once. */
static int
open_counters(void)
{
	char errbuf[512];
	int reset = 0;
	/* every process's slots and queue, and the history (state.h) */
	uint32_t nrec = state_capacity_for(opt.procs,
	    opt.engine.max_num_seqs + opt.engine.max_waiting);

	if (state_open(&srv.state, opt.state_dir, nrec, errbuf,
	    sizeof(errbuf)) != TS_OK) {
		fprintf(stderr, "tokstream-fcgi: %s; counting in this "
		    "process's memory instead (/_debug/generated sees only "
		    "its streams; fix the disk or set --state-dir)\n",
		    errbuf);
		if (state_open_memory(&srv.state, nrec) != TS_OK) {
			fprintf(stderr, "tokstream-fcgi: cannot map memory for "
			    "the counters\n");
			return -1;
		}
	}
	if ((uint64_t)opt.procs * (opt.engine.max_num_seqs +
	    opt.engine.max_waiting) + STATE_HISTORY > nrec)
		fprintf(stderr, "tokstream-fcgi: the state file is capped at "
		    "%u records, fewer than --procs x (--max-num-seqs + "
		    "--max-waiting) + %u: past that many streams at once, new "
		    "ones run unrecorded\n", nrec, STATE_HISTORY);
	if (state_capacity(srv.state) < nrec)
		/* the others run with a smaller file: they were started
		 * with fewer slots or processes */
		fprintf(stderr, "tokstream-fcgi: the state file holds %u "
		    "records, in use by other processes, and this one wants "
		    "%u (--procs %u, --max-num-seqs + --max-waiting %u, and "
		    "%u for history): kept as it is; streams that find no "
		    "free record run unrecorded (restart every responder to "
		    "resize it)\n", state_capacity(srv.state), nrec,
		    opt.procs, opt.engine.max_num_seqs + opt.engine.max_waiting,
		    STATE_HISTORY);
	if (state_bind_instance(srv.state, opt.instance, &reset) != TS_OK)
		fprintf(stderr, "tokstream-fcgi: cannot lock the state file "
		    "to check its instance name\n");
	else if (reset)
		fprintf(stderr, "tokstream-fcgi: the state file held the "
		    "records of another instance name; emptied (their ids are "
		    "not this server's)\n");
	if (metrics_open(&srv.metrics, opt.state_dir, errbuf,
	    sizeof(errbuf)) != TS_OK) {
		fprintf(stderr, "tokstream-fcgi: %s; /metrics counts this "
		    "process only\n", errbuf);
		if (metrics_open_memory(&srv.metrics) != TS_OK)
			srv.metrics = NULL;   /* every metrics_* is a no-op */
	}
	return 0;
}

/*
 * Every stream holds a descriptor (its FastCGI connection): the soft
 * limit goes up to what max-num-seqs + max-waiting streams need, as far
 * as the hard limit allows, and a shortfall is said once.
 */
static void
raise_fd_limit(uint32_t streams)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)streams + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= want)
		return;
	fprintf(stderr, "tokstream-fcgi: warning: %llu descriptors for %u "
	    "streams: raise the hard limit (ulimit -Hn)\n",
	    (unsigned long long)rl.rlim_cur, streams);
}

/*
 * The backend's part of the start-up line, into buf: "backend NAME",
 * then what the backend says of itself (describe: the llama backend's
 * model file, config, context and compute threads), then, when the
 * engine paces the steps (the simulator), the latency model's TPOT and
 * prefill in ms.
 */
static void
describe_backend(const struct engine_backend *be, char *buf, size_t cap)
{
	size_t n;
	int r;

	n = (size_t)snprintf(buf, cap, "backend %s", be->name);
	if (be->describe != NULL && n + 2 < cap) {
		memcpy(buf + n, ": ", 3);
		n += 2;
		r = be->describe(be->impl, buf + n, cap - n);
		n += r > 0 ? (size_t)r : 0;
	}
	if (engine_paces(srv.engine) && n < cap)
		snprintf(buf + n, cap - n, ", TPOT %.1f ms, prefill %.1f ms + "
		    "%.3f ms/token, latency profile %s",
		    opt.engine.lat.tpot_ms, opt.engine.lat.prefill_base_ms,
		    opt.engine.lat.prefill_per_token_ms, opt.engine.lat.name);
}

/*
 * Loads --replay's trace into srv.replay and says what it holds: a
 * trace the reader refuses, or a recording over replay_set.h's bounds,
 * stops the start with the file and line.
 */
static int
open_replay(void)
{
	char errbuf[512];
	struct replay_stats st;
	uint32_t skipped = 0;

	if (replay_load(opt.replay_path, opt.replay_speed, &srv.replay,
	    &skipped, errbuf, sizeof(errbuf)) != TS_OK) {
		fprintf(stderr, "tokstream-fcgi: --replay %s\n", errbuf);
		return -1;
	}
	replay_set_stats(srv.replay, &st);
	fprintf(stderr, "tokstream-fcgi: replay %s: %u recordings of %u "
	    "method+path (%u skipped: no status), matched by exact body "
	    "(%u keys), else by the prompt with the settings (canonical "
	    "JSON, %u keys); times / %g; a miss gets %s\n", opt.replay_path,
	    st.recordings, st.routes, skipped, st.exact_keys,
	    st.canonical_keys, opt.replay_speed, opt.replay_miss_sim ?
	    "the simulator's answer" : "404 replay_miss");
	return 0;
}

int
main(int argc, char **argv)
{
	struct backend_args ba;
	struct engine_hooks hooks;
	sigset_t sigs;
	char errbuf[512], bdesc[1024];
	int i, sig, started;

	/* Block the stop signals first, in every thread to come, so one that
	 * arrives while starting is not lost to FCGX_Init's flag-only
	 * handler but waits for sigwait. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/* --log first, so that a refused option's one line reaches the log
	 * (spawn-fcgi sends stderr to /dev/null; tokstream-ctl prints the
	 * log's last lines when the responder does not start) */
	for (i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--log") == 0 || strcmp(argv[i], "-l") == 0) {
			(void)open_log(argv[i + 1]);
			break;
		}
	options_parse(&opt, argc, argv);
	if (opt.log_path != NULL && open_log(opt.log_path) != 0)
		return 1;
	/* after --log, so that spawn-fcgi's child (stderr /dev/null) logs it */
	if (opt.threads_given)
		fprintf(stderr, "tokstream-fcgi: warning: --threads is "
		    "deprecated and ignored: streams do not hold a thread "
		    "each; --max-num-seqs and --max-waiting size the server\n");
	if (open_counters() != 0)
		return 1;
	if (fcgi_listen(opt.socket_path, opt.backlog, errbuf,
	    sizeof(errbuf)) != TS_OK) {
		fprintf(stderr, "tokstream-fcgi: %s\n", errbuf);
		return 1;
	}
	srv.opt = &opt;
	srv.started_at = time(NULL);
	srv.now = engine_now_ns;
	options_backend_args(&opt, &ba);
	if (backends_find(opt.backend)->open(&backend, &ba, errbuf,
	    sizeof(errbuf)) != TS_OK) {
		fprintf(stderr, "tokstream-fcgi: --backend %s: %s\n",
		    opt.backend, errbuf);
		return 1;
	}
	records.state = srv.state;
	records.metrics = srv.metrics;
	record_hooks(&hooks, &records);
	if (engine_create(&srv.engine, &opt.engine, &backend, &hooks) !=
	    TS_OK) {
		fprintf(stderr, "tokstream-fcgi: cannot start the engine\n");
		return 1;
	}
	srv.backend = engine_backend(srv.engine);
	if (opt.replay_path != NULL && open_replay() != 0)
		return 2;
	server_init_costs(&srv);
	{
		const char *tpl = NULL, *bos = NULL, *eos = NULL;

		if (strcmp(srv.backend->name, "llama") == 0) {
			const struct model_file *f =
			    llama_backend_file(srv.backend);

			tpl = f->chat_template;
			bos = f->bos_text;
			eos = f->eos_text;
			srv.model_meta = llama_backend_meta(srv.backend);
		}
		if (chat_model_init(opt.chat_template, tpl, bos, eos,
		    &srv.chat_template, &srv.chat_template_source, errbuf,
		    sizeof(errbuf)) != TS_OK) {
			fprintf(stderr, "tokstream-fcgi: %s\n", errbuf);
			return 2;
		}
	}
	if (engine_paces(srv.engine))
		srv.profile = engine_profile_json(&opt.engine.lat,
		    opt.engine.load_factor_max);
	raise_fd_limit(opt.engine.max_num_seqs + opt.engine.max_waiting);
	if (io_start(&srv.io, srv.now, opt.io_threads, opt.write_stall_ms) !=
	    TS_OK) {
		fprintf(stderr, "tokstream-fcgi: cannot start the I/O "
		    "threads: %s\n", strerror(errno));
		return 1;
	}
	started = fcgi_start(&srv, ACCEPT_THREADS, ACCEPT_LIGHT_THREADS);
	if (started == 0) {
		fprintf(stderr, "tokstream-fcgi: cannot start threads\n");
		return 1;
	}
	if (!engine_paces(srv.engine))
		fprintf(stderr, "tokstream-fcgi: backend %s: compute is real, "
		    "the latency model (TPOT, prefill) is off\n",
		    srv.backend->name);
	describe_backend(srv.backend, bdesc, sizeof(bdesc));
	fprintf(stderr, "tokstream-fcgi %s: pid %ld, %d accept + %d I/O "
	    "threads, state %s/%s (%u records), %s, %u slots, %u "
	    "waiting%s\n",
	    PACKAGE_VERSION, (long)getpid(), started, io_threads(srv.io),
	    opt.state_dir, STATE_FILE_NAME, state_capacity(srv.state), bdesc,
	    opt.engine.max_num_seqs, opt.engine.max_waiting,
	    opt.engine.no_cancel ? ", NO CANCELLATION (--no-cancel)" : "");
	if (srv.model_meta != NULL) {
		/* what the model's files say (format, weights, EOS ids,
		 * sampling defaults) and the chat template's source */
		char *p = json_dumps(srv.model_meta, JSON_COMPACT |
		    JSON_REAL_PRECISION(10));

		if (p != NULL)
			fprintf(stderr, "tokstream-fcgi: model %s, chat template "
			    "%s\n", p, srv.chat_template_source);
		free(p);
	}
	if (srv.profile != NULL) {
		/* the whole profile, so that a run can be repeated */
		char *p = json_dumps(srv.profile, JSON_COMPACT |
		    JSON_REAL_PRECISION(10));

		if (p != NULL)
			fprintf(stderr, "tokstream-fcgi: latency profile %s\n",
			    p);
		free(p);
	}

	/* The main thread only waits for a stop signal. */
	while (sigwait(&sigs, &sig) != 0 || sig == 0)
		;
	atomic_store(&srv.stopping, 1);
	engine_shutdown(srv.engine);
	/* Streams in flight end with an error event and [DONE] at the
	 * engine's next pass; give them a grace time. */
	for (i = 0; i < SHUTDOWN_GRACE_MS / 10 &&
	    fcgi_active() + io_active(srv.io) > 0; i++) {
		struct timespec ts = { 0, 10000000 };

		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "tokstream-fcgi: pid %ld stopped by signal %d\n",
	    (long)getpid(), sig);
	/* Idle accept threads are blocked in accept(): exit without
	 * joining. */
	_exit(0);
}
