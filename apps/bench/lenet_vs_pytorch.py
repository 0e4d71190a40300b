#!/usr/bin/python3
"""LeNet training throughput, tunecnn against PyTorch, side by side in one run.

Both train the same network (tunecnn's models/lenet.cpp) on a fixed random batch with SGD
(momentum 0.9, weight decay 5e-4). Rounds alternate between the two so that noise on the shared
machine hits both alike; each round reports its median step time, and the summary gives the
median over rounds and the ratio. Uses Debian's python3-torch (run with /usr/bin/python3).

    apps/bench/lenet_vs_pytorch.py --bench build/apps/bench --threads 2 --batch-size 64
"""
import argparse
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn


def lenet(classes=10):
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(16, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 500), nn.ReLU(), nn.Linear(500, classes))


def torch_images_per_s(batch, warmup, steps):
    torch.manual_seed(1)
    model = lenet()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(batch, 1, 28, 28) * 2 - 1
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return batch / statistics.median(times)


def tunecnn_images_per_s(bench, batch, threads, warmup, steps):
    out = subprocess.run([bench, "train", "--model", "lenet", "--batch-size", str(batch),
                          "--threads", str(threads), "--warmup", str(warmup), "--steps", str(steps)],
                         check=True, capture_output=True, text=True).stdout
    match = re.search(r"images_per_s=([0-9.]+)", out)
    if not match:
        sys.exit(f"unexpected output from {bench}:\n{out}")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default="build/apps/bench", help="path to tunecnn's bench app")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)  # PyTorch defaults to 1 thread on this machine

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; batch {args.batch_size}")
    print("round  tunecnn img/s  pytorch img/s  ratio")
    ours, theirs = [], []
    for r in range(args.rounds):
        ours.append(tunecnn_images_per_s(args.bench, args.batch_size, args.threads, args.warmup, args.steps))
        theirs.append(torch_images_per_s(args.batch_size, args.warmup, args.steps))
        print(f"{r + 1:5d}  {ours[-1]:13.0f}  {theirs[-1]:13.0f}  {ours[-1] / theirs[-1]:5.2f}")
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"median {a:13.0f}  {b:13.0f}  {a / b:5.2f}")


if __name__ == "__main__":
    main()
