#!/usr/bin/env python3
"""Draws training-loss curves from the trainers' CSV logs as one SVG
(standard library only). Usage: plot_losses.py out.svg label=file.csv..."""

import csv
import sys

WIDTH, HEIGHT, MARGIN = 720, 420, 60
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


def smooth(values, window=10):
    out = []
    for i in range(len(values)):
        chunk = values[max(0, i - window + 1): i + 1]
        out.append(sum(chunk) / len(chunk))
    return out


def main():
    out, runs = sys.argv[1], []
    for spec in sys.argv[2:]:
        label, path = spec.split("=", 1)
        with open(path) as f:
            rows = list(csv.DictReader(f))
        runs.append((label, [float(r["loss"]) for r in rows]))
    steps = max(len(v) for _, v in runs)
    top = max(max(v) for _, v in runs)
    sx = lambda i: MARGIN + (WIDTH - 2 * MARGIN) * i / max(1, steps - 1)
    sy = lambda y: HEIGHT - MARGIN - (HEIGHT - 2 * MARGIN) * y / top
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
             f'height="{HEIGHT}" font-family="sans-serif" font-size="12">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
             f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" '
             f'font-size="15">Fashion-MNIST MLP, 4 ranks: training loss '
             f'(10-step mean)</text>',
             f'<line x1="{MARGIN}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" '
             f'y2="{HEIGHT - MARGIN}" stroke="black"/>',
             f'<line x1="{MARGIN}" y1="{MARGIN}" x2="{MARGIN}" '
             f'y2="{HEIGHT - MARGIN}" stroke="black"/>',
             f'<text x="{WIDTH / 2}" y="{HEIGHT - 20}" text-anchor="middle">'
             f'step</text>']
    for k in range(5):
        y = top * k / 4
        parts.append(f'<text x="{MARGIN - 8}" y="{sy(y) + 4}" '
                     f'text-anchor="end">{y:.2f}</text>')
    for k in range(5):
        i = (steps - 1) * k // 4
        parts.append(f'<text x="{sx(i)}" y="{HEIGHT - MARGIN + 16}" '
                     f'text-anchor="middle">{i}</text>')
    for n, (label, values) in enumerate(runs):
        color = COLORS[n % len(COLORS)]
        points = " ".join(f"{sx(i):.1f},{sy(v):.1f}"
                          for i, v in enumerate(smooth(values)))
        parts.append(f'<polyline fill="none" stroke="{color}" '
                     f'stroke-width="1.5" points="{points}"/>')
        parts.append(f'<text x="{WIDTH - MARGIN - 150}" y="{MARGIN + 16 * n}" '
                     f'fill="{color}">{label}</text>')
    parts.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
