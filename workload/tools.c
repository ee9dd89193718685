/*
 * Tool definitions in requests: checked once (the file, --tool-choice, an input line's "tools"), turned into each
 * API's shape when the payload table is built (sg_tools.h). Nothing here runs during the load.
 */
#include "sg_tools.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static int say(char *buf, size_t cap, const char *fmt, ...)
{
    if (buf && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, cap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The function object of a tool: tool.function, or the tool itself when it is a bare function. */
static const json_t *function_of(const json_t *tool)
{
    const json_t *f = json_object_get(tool, "function");
    return f ? f : tool;
}

static bool name_ok(const char *s, size_t len)
{
    if (len == 0 || len > 64)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

int sg_tools_check(const json_t *tools, char *why, size_t cap)
{
    if (!json_is_array(tools) || json_array_size(tools) == 0)
        return say(why, cap,
                   "expected a non-empty JSON array of tools ([{\"type\": \"function\", \"function\": "
                   "{\"name\": ...}}])");
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t)
    {
        if (!json_is_object(t))
            return say(why, cap, "tool %zu is not an object", i);
        const json_t *type = json_object_get(t, "type");
        if (type && !(json_is_string(type) && strcmp(json_string_value(type), "function") == 0))
            return say(why, cap, "tool %zu: \"type\" must be \"function\" (the only kind of tool surge sends)", i);
        const json_t *fn = json_object_get(t, "function");
        if (fn && !json_is_object(fn))
            return say(why, cap, "tool %zu: \"function\" is not an object", i);
        if (!fn && type)
            return say(why, cap, "tool %zu: \"function\" is missing", i);
        fn = function_of(t);
        const json_t *name = json_object_get(fn, "name");
        if (!json_is_string(name))
            return say(why, cap, "tool %zu: the function has no \"name\" string", i);
        if (!name_ok(json_string_value(name), json_string_length(name)))
            return say(why, cap, "tool %zu: name \"%.64s\" is not 1 to 64 letters, digits, _ or -", i,
                       json_string_value(name));
        const json_t *desc = json_object_get(fn, "description");
        if (desc && !json_is_string(desc))
            return say(why, cap, "tool %zu (%s): \"description\" is not a string", i, json_string_value(name));
        const json_t *params = json_object_get(fn, "parameters");
        if (params && !json_is_object(params))
            return say(why, cap, "tool %zu (%s): \"parameters\" is not a JSON Schema object", i,
                       json_string_value(name));
        for (size_t k = 0; k < i; k++)
            if (json_equal(json_object_get(function_of(json_array_get(tools, k)), "name"), name))
                return say(why, cap, "tools %zu and %zu are both named \"%s\"", k, i, json_string_value(name));
    }
    return 0;
}

json_t *sg_tools_load(const char *path, char *err, size_t errlen)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) {
        if (je.line <= 0)
            say(err, errlen, "--tools %s: %s", path, je.text);
        else
            say(err, errlen, "--tools %s: line %d: %s", path, je.line, je.text);
        return NULL;
    }
    json_t *tools = json_is_object(doc) ? json_object_get(doc, "tools") : doc;
    char why[160];
    if (!tools || sg_tools_check(tools, why, sizeof why) < 0) {
        say(err, errlen, "--tools %s: %s", path, tools ? why : "the object has no \"tools\" array");
        json_decref(doc);
        return NULL;
    }
    json_incref(tools);
    json_decref(doc);
    return tools;
}

int sg_tools_choice_check(const char *choice, const json_t *tools, char *err, size_t errlen)
{
    if (strcmp(choice, "auto") == 0 || strcmp(choice, "required") == 0 || strcmp(choice, "none") == 0)
        return 0;
    if (!tools)
        return say(err, errlen, "--tool-choice %s: a tool's name needs --tools FILE", choice);
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t)
    {
        const char *name = json_string_value(json_object_get(function_of(t), "name"));
        if (name && strcmp(name, choice) == 0)
            return 0;
    }
    return say(err, errlen, "--tool-choice %s: expected auto, required, none or the name of a tool in the --tools file",
               choice);
}

int sg_tools_config(const char *path, const char *choice, int kind, char **json, char *err, size_t errlen)
{
    *json = NULL;
    if (kind < 0 || !sg_tools_kind_ok((sg_oai_kind_t)kind))
        return say(err, errlen, "--%s: tools apply to the chat, responses and messages endpoint types, not %s",
                   path ? "tools" : "tool-choice", kind < 0 ? "triton" : sg_endpoint((sg_oai_kind_t)kind)->name);
    json_t *tools = NULL;
    if (path && !(tools = sg_tools_load(path, err, errlen)))
        return -1;
    if (choice && sg_tools_choice_check(choice, tools, err, errlen) < 0) {
        json_decref(tools);
        return -1;
    }
    if (tools) {
        *json = json_dumps(tools, JSON_COMPACT);
        json_decref(tools);
        if (!*json)
            return say(err, errlen, "--tools %s: out of memory", path);
    }
    return 0;
}

bool sg_tools_kind_ok(sg_oai_kind_t kind)
{
    return kind == SG_OAI_CHAT || kind == SG_OAI_RESPONSES || kind == SG_OAI_MESSAGES;
}

/* One tool in kind's shape (a new reference). */
static json_t *convert(sg_oai_kind_t kind, const json_t *tool)
{
    const json_t *fn = function_of(tool);
    const json_t *name = json_object_get(fn, "name"), *desc = json_object_get(fn, "description"),
                 *params = json_object_get(fn, "parameters");
    if (kind == SG_OAI_CHAT) {
        if (json_object_get(tool, "function"))
            return json_deep_copy(tool);
        return json_pack("{s:s, s:O}", "type", "function", "function", fn);
    }
    json_t *o = json_object();
    int rc = o ? 0 : -1;
    if (kind == SG_OAI_RESPONSES) {
        rc = rc ? rc : json_object_set_new(o, "type", json_string("function"));
        rc = rc ? rc : json_object_set(o, "name", (json_t *)name);
        if (desc)
            rc = rc ? rc : json_object_set(o, "description", (json_t *)desc);
        if (params)
            rc = rc ? rc : json_object_set(o, "parameters", (json_t *)params);
    } else {
        rc = rc ? rc : json_object_set(o, "name", (json_t *)name);
        if (desc)
            rc = rc ? rc : json_object_set(o, "description", (json_t *)desc);
        /* input_schema is required by the Messages API */
        rc = rc ? rc
                : json_object_set_new(o, "input_schema",
                                      params ? json_deep_copy(params)
                                             : json_pack("{s:s, s:{}}", "type", "object", "properties"));
    }
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *choice_of(sg_oai_kind_t kind, const char *choice)
{
    bool word = strcmp(choice, "auto") == 0 || strcmp(choice, "required") == 0 || strcmp(choice, "none") == 0;
    switch (kind) {
    case SG_OAI_CHAT:
        return word ? json_string(choice) : json_pack("{s:s, s:{s:s}}", "type", "function", "function", "name", choice);
    case SG_OAI_RESPONSES:
        return word ? json_string(choice) : json_pack("{s:s, s:s}", "type", "function", "name", choice);
    default:
        if (!word)
            return json_pack("{s:s, s:s}", "type", "tool", "name", choice);
        return json_pack("{s:s}", "type", strcmp(choice, "required") == 0 ? "any" : choice);
    }
}

int sg_tools_apply(json_t *body, sg_oai_kind_t kind, const json_t *tools, const char *choice)
{
    if (!sg_tools_kind_ok(kind))
        return SG_EINVAL;
    json_t *arr = json_array();
    if (!arr)
        return SG_ENOMEM;
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t)
    {
        if (json_array_append_new(arr, convert(kind, t)) != 0) {
            json_decref(arr);
            return SG_ENOMEM;
        }
    }
    if (json_object_set_new(body, "tools", arr) != 0)
        return SG_ENOMEM;
    if (choice && json_object_set_new(body, "tool_choice", choice_of(kind, choice)) != 0)
        return SG_ENOMEM;
    return 0;
}
