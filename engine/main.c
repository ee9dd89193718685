/* surge: entry point. `surge profile ...` measures a server; `surge mock ...` is the bundled mock server. */
#include "sg_cfgfile.h"
#include "sg_dist.h"
#include "sg_mock.h"
#include "sg_report.h"
#include "sg_run.h"
#include "sg_tokenizer.h"

#include <stdio.h>
#include <string.h>

#ifndef SURGE_VERSION
#define SURGE_VERSION "dev"
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "surge %s: a load generator and benchmark for LLM inference servers\n\n"
            "usage:\n"
            "  surge profile -m MODEL -u URL [options]   measure a server (see `surge profile --help`)\n"
            "  surge tokenize --tokenizer T [--count]   token ids of the text on stdin (`surge tokenize --help`)\n"
            "  surge mock --port P [options]             run the bundled mock OpenAI server (`surge mock --help`)\n"
            "  surge report DIR... [-o FILE]             an HTML report of runs (`surge report --help`)\n"
            "  surge compare DIR DIR... [-o FILE]        the same, to compare runs\n"
            "  surge merge DIR... -o OUT                 one run's files from its parts' (`surge merge --help`)\n"
            "  surge config validate|expand|init|keys    config files for surge profile --config (`surge config`)\n"
            "  surge --version\n",
            SURGE_VERSION);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "profile") == 0)
        return sg_profile_main(argc - 1, argv + 1);
    if (strcmp(cmd, "tokenize") == 0)
        return sg_tokenize_main(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0)
        return sg_report_main(argc - 1, argv + 1);
    if (strcmp(cmd, "compare") == 0)
        return sg_compare_main(argc - 1, argv + 1);
    if (strcmp(cmd, "merge") == 0)
        return sg_merge_main(argc - 1, argv + 1);
    if (strcmp(cmd, "config") == 0)
        return sg_config_main(argc - 1, argv + 1);
    if (strcmp(cmd, "mock") == 0)
        return sg_mock_main(argc - 1, argv + 1);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("surge %s\n", SURGE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "surge: unknown command \"%s\"\n\n", cmd);
    usage(stderr);
    return 2;
}
