"""Coverage of PyTorch's OpInfo database by nbflow: entries mapped, and samples by outcome
(pass, documented difference, xfail by kind, unexpected), as tests/test_opinfo.py counts them.

    python tools/opinfo_report.py            # the figures
    python tools/opinfo_report.py --entries  # and each entry's failing outcomes
"""

import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import opinfo_harness as h
import test_opinfo as t


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", action="store_true", help="list each entry's non-passes")
    args = parser.parse_args()
    start = time.time()
    counts = collections.Counter()
    for key in t.MAPPED:
        unexpected, stale, entry_counts = t.check_entry(key)
        counts.update(entry_counts)
        if args.entries and (set(entry_counts) - {"pass", "n/a"} or stale):
            print(f"  {key}: {dict(entry_counts)}" + (f" stale {stale}" if stale else ""))
    total = len(h.ENTRIES)
    samples = sum(v for k, v in counts.items() if k != "n/a")
    passing = counts["pass"] + counts["documented"]
    print(f"OpInfo entries (torch {torch_version()}): {total}")
    print(f"mapped to nbflow: {len(t.MAPPED)} ({100 * len(t.MAPPED) / total:.1f}%)")
    print(
        f"samples compared: {samples} (first {h.SAMPLES_PER_DTYPE} per dtype of float64, "
        f"float32, int64, complex128; float64 and complex128 gradients)"
    )
    print(f"  pass: {counts['pass']} ({100 * counts['pass'] / samples:.1f}%)")
    print(f"  documented difference: {counts['documented']}")
    print(f"  pass + documented: {passing} ({100 * passing / samples:.1f}%)")
    for k in sorted(k for k in counts if k.startswith(("xfail", "unexpected"))):
        print(f"  {k}: {counts[k]}")
    print(f"  n/a (PyTorch itself raises): {counts['n/a']}")
    print(f"({time.time() - start:.0f} s)")


def torch_version():
    import torch

    return torch.__version__


if __name__ == "__main__":
    main()
