"""Fails when an option gradcomm-compile --help prints (generated from the
pipeline option structs) is missing from docs/compiling.md."""

import re
import sys


def main():
    help_text = open(sys.argv[1]).read()
    doc = open(sys.argv[2]).read()
    options = set(re.findall(r"^\s+(--[a-z][a-z0-9-]*)", help_text, re.M))
    options -= {"--help", "--help-list", "--version"}
    missing = sorted(o for o in options if o not in doc)
    if missing:
        print("not documented in docs/compiling.md:", " ".join(missing))
        return 1
    print("documented: %d options" % len(options))
    return 0


if __name__ == "__main__":
    sys.exit(main())
