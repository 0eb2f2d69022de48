#!/usr/bin/env python3
"""Counts passed/failed/skipped test cases in JUnit XML files (lit's xunit
output and ctest's --output-junit) and prints "N passed, N failed, N skipped".

Usage: summarize_junit.py <extra-failures> <file.xml>...
A missing or unreadable file counts as one failure: a run that produced no
results must not read as green.
"""

import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = skipped = 0
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as err:
        print(f"summarize: cannot read {path}: {err}", file=sys.stderr)
        return 0, 1, 0
    for case in root.iter("testcase"):
        tags = {child.tag for child in case}
        status = case.get("status", "")
        if tags & {"failure", "error"} or status == "fail":
            failed += 1
        elif "skipped" in tags or status in ("notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main():
    passed, failed, skipped = 0, int(sys.argv[1]), 0
    for path in sys.argv[2:]:
        p, f, s = count(path)
        passed, failed, skipped = passed + p, failed + f, skipped + s
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
