/*
 * jsonschema/schema_gen.h - deterministic JSON text valid against a JSON
 * Schema: what the simulated model writes for a tool call's `arguments`
 * (OpenAI function calling: the function's `parameters` schema) and for
 * structured output (response_format {"type":"json_schema",
 * "json_schema":{"schema","strict"}}). Pure: no I/O, no global state,
 * integer arithmetic and rng.h (plus IEEE double comparisons and
 * divisions, which are exact operations, and snprintf "%.17g" to prefer
 * numbers that print short), so a (schema, seed) gives the same bytes on
 * every run and machine.
 *
 * Honoured keywords (JSON Schema 2020-12; draft-04..07 and OpenAPI 3.0
 * spellings where noted):
 *   any type   type (a name or an array of names; one with an instance is
 *              picked), no type (inferred: object, array, string or
 *              number keywords, a string or number format give those
 *              types; {} or true give a string, integer or boolean),
 *              nullable: true (OpenAPI 3.0: adds "null"), enum, const
 *              (one value is copied exactly, re-serialised compactly;
 *              with both, the enum values equal to const; beside them
 *              only type, nullable, minLength, maxLength, minimum,
 *              maximum, exclusiveMinimum, exclusiveMaximum and
 *              multipleOf, which filter the values)
 *   objects    properties, required, additionalProperties (false, true
 *              or a schema: no undeclared key is ever added, except a
 *              required one, whose value then follows the schema;
 *              refused when it is false), minProperties, maxProperties
 *              (met by how many optional properties are included; each
 *              is included with probability 1/2 otherwise; refused when
 *              the declared properties cannot meet them)
 *   arrays     items (a schema; draft-07 tuple arrays too, with
 *              additionalItems), prefixItems, minItems, maxItems (length
 *              in [minItems, min(maxItems, minItems + 3)]; with a prefix,
 *              every prefix item maxItems allows (at least minItems),
 *              and up to 3 more only from an explicit items or
 *              additionalItems schema), uniqueItems (items are made
 *              distinct, each from the earlier ones whose types overlap
 *              its own, k of them: a schema with at most 4096 values
 *              (enum/const, null, boolean, a small numeric range, a..z
 *              strings of at most 2 characters, and anyOf, objects and
 *              short arrays of those) is drawn among the values not
 *              taken, so it needs k + 1 values; another is drawn again
 *              while it repeats, so it needs an estimated 4 x k distinct
 *              values; refused otherwise, for the first minItems items.
 *              An item number range open on one side widens to
 *              4 x minItems + 4 values)
 *   strings    minLength, maxLength (code points; plain strings are one
 *              to three lowercase ASCII words, cut at a word's end or
 *              extended to fit, so bytes == code points), format
 *              "date-time" (RFC 3339, UTC), "date", "time" (with "Z"),
 *              "email", "uuid" (version 4), "uri", "uri-reference",
 *              "url", "ipv4", "hostname" (with length bounds only when
 *              every value of the format fits them)
 *   numbers    minimum, maximum, exclusiveMinimum, exclusiveMaximum
 *              (2020-12 numbers and the draft-04 booleans), multipleOf (a
 *              decimal with at most 9 fractional digits and at most
 *              2^53: 5, 0.5, 0.01; the value divided by it is an exact
 *              integer in IEEE double, as ajv and python-jsonschema
 *              compute it), format "int32" (its range), "int64" (a
 *              number is then an integer), "float", "double". Integers
 *              stay within +-2^53 (a range only beyond it, as a minimum
 *              of 2^53 + 1, is refused); unbounded ones are in 0..100, with
 *              one bound in the 100 next to it (not below 0 when only a
 *              maximum >= 0 is given). Numbers: the same ranges with two
 *              decimals (0.00..100.00), else the first of the steps 0.1,
 *              1, 0.001 ... 1e-9 that meets the bounds, else a bound
 *              itself or their midpoint; an integer multipleOf gives
 *              integers, a decimal one its multiples.
 *   combining  anyOf (one branch with an instance), oneOf (one branch; a
 *              value valid against two branches would be invalid, so
 *              oneOf is refused unless every two branches accept
 *              disjoint types (integer and number overlap), disjoint
 *              enum/const values, or one requires a property whose
 *              enum/const values the other's same property rejects (or
 *              the other has additionalProperties false and does not
 *              declare it)), allOf (one part alone, or object schemas:
 *              type "object", properties, required, additionalProperties,
 *              minProperties, maxProperties; nested allOf and $ref parts
 *              are followed, 8 $refs deep; properties and required are
 *              merged, a property declared twice must have equal
 *              schemas, the largest minProperties and smallest
 *              maxProperties hold, and a part's additionalProperties
 *              other than true must declare every name of the others),
 *              $ref to "#", "#/$defs/NAME" and "#/definitions/NAME" of
 *              the root schema (NAME with RFC 6901 ~0 ~1 and RFC 3986
 *              %XX escapes).
 * Ignored: annotations (title, description, default, examples, $schema,
 * $id, $comment, deprecated, readOnly, writeOnly, $anchor, ...) and
 * unknown keywords, as validators ignore them; $defs and definitions
 * only serve $ref (unreferenced ones are not checked), and an
 * additionalProperties schema only serves undeclared required keys.
 * Refused (TS_EINVAL, naming the keyword): pattern, patternProperties,
 * propertyNames, dependentRequired, dependentSchemas, dependencies, if,
 * then, else, not, contains, minContains, maxContains,
 * unevaluatedProperties, unevaluatedItems, $dynamicRef, $recursiveRef,
 * other formats and $refs, combinations not listed above ($ref, anyOf or
 * oneOf beside any keyword but annotations and $defs; anyOf beside
 * oneOf; allOf of other than object schemas), malformed keyword values,
 * and any subschema that contradicts itself (minimum above maximum, no
 * enum value left, minLength above maxLength, ...) even where it is
 * optional.
 *
 * Recursion ($ref) is bounded: from SCHEMA_GEN_SOFT_DEPTH containers
 * deep, 8 nested $refs, or once 1/8 of SCHEMA_GEN_MAX_OUT has been made,
 * the generator writes the smallest instance (no optional properties but
 * the cheapest ones minProperties needs, minItems items, the anyOf
 * branch and type with the shortest finite instance; scalars still
 * vary; the items of uniqueItems keep varying past SCHEMA_GEN_SOFT_DEPTH,
 * their choices weighed by distinct values); a schema whose required
 * chain never ends is refused ("schema recursion has no finite
 * instance"). Refused with TS_ELIMIT: a
 * subschema whose smallest instance nests more than SCHEMA_GEN_MAX_DEPTH
 * - SCHEMA_GEN_SOFT_DEPTH arrays and objects, a root whose smallest
 * instance is over SCHEMA_GEN_MAX_OUT bytes, a oneOf too large to check
 * (4e6 comparisons), and the other limits below. Generating stops with
 * TS_ELIMIT once 4 x SCHEMA_GEN_MAX_OUT bytes have been made (repeats
 * for uniqueItems included) or the text is over SCHEMA_GEN_MAX_OUT.
 *
 * Output: compact JSON, no spaces, keys in the schema's property order,
 * non-ASCII kept as UTF-8, the bytes json_dumps(JSON_COMPACT |
 * JSON_PRESERVE_ORDER) would write for the same value (JSON_ENCODE_ANY
 * too, for a root that is not an object or array). Messages name a path
 * of over 64 bytes as "..." and its last segments.
 */
#ifndef TS_JSONSCHEMA_SCHEMA_GEN_H
#define TS_JSONSCHEMA_SCHEMA_GEN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/ts.h"
#include "jsonschema/schema_limits.h"

/*
 * A schema compiled and checked once, from which instances are made as
 * often as needed (a request's tool parameters: checked when the
 * request is parsed, generated from when it is planned).
 */
struct schema_gen;

/*
 * Compiles and checks `schema` (referenced: it must not change while
 * *out lives) as schema_gen_check does, spending at most *steps work
 * units (SCHEMA_GEN_MAX_STEPS: subschemas, keywords, properties and
 * values visited, values listed, copied and compared, costs recomputed
 * while $ref cycles settle), and takes what it spent off *steps, so that
 * the schemas of one request share one budget. TS_OK with *out (free it
 * with schema_gen_free); else *out is NULL and the error is
 * schema_gen_check's, or TS_ELIMIT with *steps 0 when the budget ran out
 * ("checking the schema takes more than N steps").
 */
enum ts_err schema_gen_compile(const json_t *schema, uint64_t *steps,
    struct schema_gen **out, char *msg, size_t msglen);

/*
 * Appends an instance of a compiled schema chosen by `seed`, as
 * schema_gen, but stops once its text has reached `cap` bytes: the
 * containers open at that point close, and the text is then the first
 * bytes (at least cap of them, exactly those the whole instance starts
 * with) of the instance schema_gen would make, not an instance itself.
 * Nothing past the cap is made: a caller that sends at most cap bytes
 * (max_tokens tokens of a guide) pays for what it sends. SIZE_MAX: the
 * whole instance. An item of a uniqueItems array is made whole before
 * the cut. One generation spends at most SCHEMA_GEN_MAX_STEPS steps
 * (TS_ELIMIT beyond). Errors as schema_gen.
 */
enum ts_err schema_gen_emit(struct schema_gen *g, uint64_t seed, size_t cap,
    struct ts_buf *out, char *msg, size_t msglen);

/* Frees a compiled schema; accepts NULL. */
void schema_gen_free(struct schema_gen *g);

/*
 * Checks that `schema` (borrowed) is one schema_gen can satisfy, with
 * the keywords of the file comment, and that its smallest instance fits
 * the limits (schema_limits.h), within SCHEMA_GEN_MAX_STEPS steps. TS_OK;
 * TS_EINVAL for an unsupported or unsatisfiable schema, TS_ELIMIT for one
 * over a limit. On error `msg` (when not NULL)
 * holds a NUL-terminated English message of at most msglen bytes naming
 * the JSON pointer of the subschema and the keyword, e.g.
 * `schema at /properties/x: "pattern" is not supported` (the root is
 * "(root)").
 */
enum ts_err schema_gen_check(const json_t *schema, char *msg,
    size_t msglen);

/*
 * Appends to `out` compact JSON text valid against `schema` (borrowed),
 * chosen by `seed`: the same (schema, seed) give the same bytes on every
 * run and machine. Different seeds give different texts wherever the
 * schema leaves freedom. TS_EINVAL and TS_ELIMIT with `msg` as
 * schema_gen_check (it runs the same checks first); TS_ELIMIT as well
 * when out's limit is reached; TS_ENOMEM if jansson cannot allocate. On
 * any error nothing is appended.
 */
enum ts_err schema_gen(const json_t *schema, uint64_t seed,
    struct ts_buf *out, char *msg, size_t msglen);

#endif /* TS_JSONSCHEMA_SCHEMA_GEN_H */
