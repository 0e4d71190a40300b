#!/usr/bin/python3
"""PyTorch's side of `bench memory`: the growth of the peak resident set over a training run.

Measured as bench memory measures tunecnn: the resident set (VmRSS) once torch is imported and
its threads set, before anything of the network exists, is the baseline (the peak is reset to
it); then the network (as
train_vs_pytorch.py builds it, the same as tunecnn's models), SGD with momentum, a random batch,
`warmup + steps` training steps; the answer is the peak resident set (VmHWM) minus the baseline.
Prints one line: `ok GROWTH_BYTES torch VERSION`, or `error MESSAGE`.

    /usr/bin/python3 apps/bench/memory_pytorch.py --model mobilenet --batch-size 16 --threads 2
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def status_bytes(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="lenet")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="steps after the first (warm-up) one")
    args = parser.parse_args()
    try:
        import torch
        import torch.nn as nn
        from train_vs_pytorch import build
    except ImportError as e:
        print(f"error cannot import torch ({e}); install Debian's python3-torch", flush=True)
        return
    torch.set_num_threads(args.threads)  # PyTorch defaults to 1 thread on this machine
    torch.manual_seed(1)
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # the peak so far (importing torch) is not the run's
    baseline = status_bytes("VmRSS")
    model, shape, classes = build(args.model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.rand(args.batch_size, *shape) * 2 - 1
    y = torch.randint(0, classes, (args.batch_size,))
    for _ in range(1 + args.steps):
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    print(f"ok {status_bytes('VmHWM') - baseline} torch {torch.__version__}", flush=True)


if __name__ == "__main__":
    main()
