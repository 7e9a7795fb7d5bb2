/*
 * jsonschema/schema_limits.h - the limits of the JSON Schema generator
 * (schema_gen.h, which includes this): what a schema and one generated
 * instance may reach. Every pass checks against them. Only constants.
 */
#ifndef TS_JSONSCHEMA_SCHEMA_LIMITS_H
#define TS_JSONSCHEMA_SCHEMA_LIMITS_H

#define SCHEMA_GEN_MAX_DEPTH 32        /* nesting of the output's arrays
					* and objects */
#define SCHEMA_GEN_SOFT_DEPTH 4        /* deeper: smallest instances */
#define SCHEMA_GEN_MAX_SCHEMA_DEPTH 64 /* nesting of subschemas within
					* the root or one $defs entry */
#define SCHEMA_GEN_MAX_OUT (1u << 20)  /* bytes of one output */
#define SCHEMA_GEN_MAX_ITEMS 1024      /* minItems, prefixItems */
#define SCHEMA_GEN_MAX_LENGTH 4096     /* minLength */
#define SCHEMA_GEN_MAX_REFS 128        /* distinct $ref targets */
#define SCHEMA_GEN_MAX_STEPS 2000000   /* work units (steps) to compile
					* and check the schemas of one
					* request, and to generate one
					* instance: a subschema, keyword,
					* property or value visited, a value
					* listed, copied or compared, a cost
					* recomputed (schema_gen.h) */

#endif /* TS_JSONSCHEMA_SCHEMA_LIMITS_H */
