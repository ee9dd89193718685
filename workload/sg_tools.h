/*
 * Tool definitions in requests (--tools FILE, --tool-choice, an input file's per-line "tools"; docs/workloads.md,
 * *Tool calls*). The user gives OpenAI chat's shape, [{"type": "function", "function": {"name", "description",
 * "parameters"}}...]; each API gets its own shape when the body is built, before the run:
 *   chat       tools as given; tool_choice "auto" | "required" | "none" | {"type":"function","function":{"name"}}
 *   responses  flat: [{"type":"function","name","description","parameters"}]; tool_choice the same words, or
 *              {"type":"function","name"}
 *   messages   [{"name","description","input_schema"}] (parameters, or an empty object schema); tool_choice
 *              {"type":"auto"} | {"type":"any"} (required) | {"type":"none"} | {"type":"tool","name"}
 * Other endpoint types take no tools: refused with the flags.
 */
#ifndef SG_TOOLS_H
#define SG_TOOLS_H

#include "sg_common.h"
#include "sg_openai.h"

#include <jansson.h>

/*
 * Check a list of tools in OpenAI chat's shape: a non-empty array of {"type": "function", "function": {"name":
 * 1 to 64 of [A-Za-z0-9_-], "description": a string (optional), "parameters": an object (optional)}}; a bare
 * {"name", "description", "parameters"} (the function itself) is taken too. 0, or -1 with what is wrong in why.
 */
int sg_tools_check(const json_t *tools, char *why, size_t cap);

/* Read FILE: a JSON array of tools, or an object {"tools": [...]}; checked. A new reference, or NULL with err set
 * ("--tools FILE: ..."). */
json_t *sg_tools_load(const char *path, char *err, size_t errlen);

/* --tool-choice: auto, required, none, or a tool's name among tools. 0, or -1 with err set. */
int sg_tools_choice_check(const char *choice, const json_t *tools, char *err, size_t errlen);

/*
 * The flags' check (engine/config.c): --tools read and checked into *json (compact text, NULL without a file),
 * --tool-choice checked against it, kind (-1: triton) one that takes tools. 0, or -1 with one line in err.
 */
int sg_tools_config(const char *path, const char *choice, int kind, char **json, char *err, size_t errlen);

/* Whether kind takes tools (chat, responses, messages). */
bool sg_tools_kind_ok(sg_oai_kind_t kind);

/*
 * Set body's "tools" (and "tool_choice" when choice is not NULL) in kind's shape from tools in OpenAI chat's shape
 * (checked). 0, or SG_ENOMEM, or SG_EINVAL for a kind that takes no tools.
 */
int sg_tools_apply(json_t *body, sg_oai_kind_t kind, const json_t *tools, const char *choice);

#endif
