/*
 * server/chat_model.h - the chat template the dialects render with
 * (proto/chat.h's renderer): the model's own Jinja template (a GGUF
 * file's tokenizer.chat_template, a Hugging Face folder's
 * tokenizer_config.json chat_template), or one given with
 * --chat-template FILE, rendered by jinja/ as Hugging Face's
 * apply_chat_template does: messages [{role, content}], tools (the
 * request's, parsed), add_generation_prompt, bos_token, eos_token.
 */
#ifndef TS_SERVER_CHAT_MODEL_H
#define TS_SERVER_CHAT_MODEL_H

#include <stddef.h>

#include "common/ts.h"

/*
 * Chooses and installs the template: `option` is --chat-template's
 * value (NULL: the model's own when it has one; "tokstream": the
 * built-in; "tinyllama", "chatml", "llama3": those families' published
 * templates; anything else a file of at most 1 MiB). model_template,
 * bos and eos are the model's (NULL when it has none). Sets *text to the
 * template in use (for /v1/models; borrowed for the process's life) and
 * *source to "model", "file", "tokstream" or the family's name. Returns TS_OK, or
 * TS_EINVAL / TS_ESYS / TS_EFORMAT with err ("--chat-template t.jinja:
 * line 3, column 5: unexpected 'endfor'").
 */
enum ts_err chat_model_init(const char *option, const char *model_template,
    const char *bos, const char *eos, const char **text,
    const char **source, char *err, size_t errlen);

#endif /* TS_SERVER_CHAT_MODEL_H */
