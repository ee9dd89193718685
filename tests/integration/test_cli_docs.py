# ctest: one-backend (reads --help and docs; nothing is sent)
"""docs/cli.md cannot drift from the flags: every long option of surge profile (the table getopt reads, as
`surge config keys` lists it: the config file's keys) is in `surge profile --help` and in docs/cli.md's surge
profile section, and every --flag those two name is an option."""
import os
import re

import harness

FLAG = re.compile(r"(?<![\w-])--([a-z0-9][a-z0-9-]*[a-z0-9])")
NOT_KEYS = {"help", "version", "config"}  # options of the command line only: a config file cannot hold them


def main(h):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    rc = h.run([h.surge, "config", "keys"], timeout=30)
    keys = set(rc.stdout.split())
    h.check(rc.returncode == 0 and len(keys) > 100 and "request-count" in keys and "base-url" in keys,
            "surge config keys lists the options", (rc.returncode, len(keys), rc.stderr))
    options = keys | NOT_KEYS
    rc = h.run([h.surge, "profile", "--help"], timeout=30)
    in_help = set(FLAG.findall(rc.stdout))
    with open(os.path.join(root, "docs", "cli.md")) as f:
        doc = f.read()
    start = doc.find("## surge profile\n")
    end = doc.find("\n## ", start + 1)
    h.check(0 <= start < end, "docs/cli.md has its surge profile section", (start, end))
    in_doc = set(FLAG.findall(doc[start:end]))
    for where, named in (("surge profile --help", in_help), ("docs/cli.md (surge profile)", in_doc)):
        missing = sorted(options - named)
        h.check(not missing, "%s names every option" % where, missing)
        unknown = sorted(named - options)
        h.check(not unknown, "every --flag %s names is an option" % where, unknown)


harness.main(main)
