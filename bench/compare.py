#!/usr/bin/env python3
"""Compares `nacre bench` JSON files of two builds run back to back.

Usage: python3 bench/compare.py BEFORE.json [BEFORE2.json ...] -- AFTER.json [AFTER2.json ...]

Takes per benchmark the median over the runs of each side, prints a table of
before, after and after/before, and the geometric mean of the ratios.
"""
import json
import math
import statistics
import sys


def load(paths):
    runs = [json.load(open(p))["results"] for p in paths]
    names = set.intersection(*(set(r) for r in runs))
    return {n: statistics.median(r[n] for r in runs) for n in names}


def fmt(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main():
    args = sys.argv[1:]
    split = args.index("--")
    before, after = load(args[:split]), load(args[split + 1:])
    names = sorted(set(before) & set(after))
    ratios = []
    print(f"{'benchmark':44} {'before':>11} {'after':>11} {'after/before':>13}")
    for n in names:
        if before[n] <= 0 or after[n] <= 0:
            continue
        r = after[n] / before[n]
        ratios.append(r)
        print(f"{n:44} {fmt(before[n]):>11} {fmt(after[n]):>11} {r:>12.3f}×")
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\n{len(ratios)} benchmarks; geometric mean of after/before: {geo:.3f}×; "
          f"min {min(ratios):.3f}×, max {max(ratios):.3f}×")


if __name__ == "__main__":
    main()
