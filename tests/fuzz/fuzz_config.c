/*
 * The command line of `surge profile` (engine/config.c) on arbitrary words: the input, split at newlines, is the
 * flags after "profile -m m -u 127.0.0.1:9" (at most 32 words; --help and -h are left out, they only print the
 * usage). Checks, for every input:
 *  - sg_config_parse returns 0, 1 (--version) or SG_EINVAL, never crashes or leaks;
 *  - a configuration it accepts describes itself as one JSON object (what the summary's input_config holds), and
 *    the command line it echoes (sg_config_command) is one line;
 *  - sg_config_free leaves nothing behind, also after a failed parse.
 * The parser's messages on bad input go to stderr: it is pointed at /dev/null around each call.
 */
#define _GNU_SOURCE
#include "sg_config.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, __VA_ARGS__);                                                                                  \
        fprintf(stderr, "\n");                                                                                         \
        abort();                                                                                                       \
    } while (0)

#define MAX_WORDS 32

static int devnull = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_WORDS + 8];
    int argc = 0;
    argv[argc++] = "profile";
    argv[argc++] = "-m";
    argv[argc++] = "m";
    argv[argc++] = "-u";
    argv[argc++] = "127.0.0.1:9";
    int fixed = argc;
    for (char *save = NULL, *w = strtok_r(text, "\n", &save); w && argc < fixed + MAX_WORDS;
         w = strtok_r(NULL, "\n", &save)) {
        if (strcmp(w, "-h") == 0 || strncmp(w, "--help", 6) == 0 || strncmp(w, "--he", 4) == 0)
            continue; /* getopt takes any unique prefix of --help */
        argv[argc++] = w;
    }
    argv[argc] = NULL;
    char *cmd = sg_config_command(argc, argv);
    if (cmd && strchr(cmd, '\n')) /* no word holds a newline (the input is split on them), so neither may the echo */
        FAIL("the echoed command line spans lines: %s", cmd);
    free(cmd);
    sg_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    fflush(stderr);
    int saved = dup(2);
    if (devnull >= 0)
        dup2(devnull, 2);
    int rc = sg_config_parse(&cfg, argc, argv);
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    if (rc != 0 && rc != 1 && rc != SG_EINVAL)
        FAIL("sg_config_parse returned %d", rc);
    if (rc == 0) {
        char *js = sg_config_to_json(&cfg);
        if (!js)
            FAIL("an accepted configuration has no JSON description");
        json_error_t je;
        json_t *o = json_loads(js, 0, &je);
        if (!json_is_object(o))
            FAIL("input_config is not a JSON object (%s): %.300s", je.text, js);
        json_decref(o);
        free(js);
    }
    sg_config_free(&cfg);
    free(text);
    return 0;
}
