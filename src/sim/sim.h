/*
 * sim/sim.h - the simulator backend: a struct engine_backend
 * (backend/backend.h) whose tokens cost no compute, so the engine's latency
 * model alone decides when they appear. Deterministic: the same prompt,
 * model and sampling give the same ids in any process, on any run.
 *
 * Its named simulated models:
 *   SIM_MODEL_LM   "tokstream-sim": the language model of sim/lm.h, with
 *                  OpenAI sampling and an EOS token; what the OpenAI
 *                  endpoints serve.
 *   SIM_MODEL_LAB  "tokstream-lab": the lab generator of sim/lab.h, no
 *                  sampling, never EOS, canonical text; what /stream and
 *                  /generate use (the backend's lab_model).
 * Prompt tokens are counted with sim_tokenize; there is no context limit.
 */
#ifndef TS_SIM_SIM_H
#define TS_SIM_SIM_H

#include "backend/backend.h"

enum sim_model {
	SIM_MODEL_LM = 0,
	SIM_MODEL_LAB = 1
};

/* Fills *out with the simulator backend (nothing to open or close). */
void sim_backend(struct engine_backend *out);

#endif /* TS_SIM_SIM_H */
