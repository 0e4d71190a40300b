#!/usr/bin/python3
"""Training throughput, tunecnn against PyTorch, side by side in one run.

Both train the same network on a fixed random batch with SGD (momentum 0.9, weight decay 5e-4):
LeNet as models/lenet.cpp builds it, MobileNet v1 as models/mobilenet.cpp builds it (names
mobilenet, mobilenet-0.5, mobilenet-0.5-128: width multiplier and input side; 3x3 stride-2 conv,
13 depthwise-separable blocks with BatchNorm and ReLU6, global average pooling, 1000 classes), or
AlexNet as models/alexnet.cpp builds it (the single tower on 3x227x227: five convs, local
response normalisation after the first two with n 5, alpha 1e-4, beta 0.75, k 2, three max
pools 3/2, fc 4096 and 4096 with dropout 0.5, 1000 classes).
Rounds alternate between the two so that noise on the shared machine hits both alike; each round
reports its median step time, and the summary gives the median over rounds and the ratio. The
tunecnn side is `bench train`, which plans the model with the autotuner (--tune, --tune-cache)
before timing. Uses Debian's python3-torch (run with /usr/bin/python3).

--pytorch-only times the PyTorch side alone and prints one `result pytorch ...` line; with
--device cuda (fp32, cudnn.benchmark on, TF32 as --tf32 says) it is the anchor that gpu-check
sets beside `bench plans --device cuda`, tunecnn's side on the GPU.

    apps/bench/train_vs_pytorch.py --bench build/apps/bench --model lenet --batch-size 64
    apps/bench/train_vs_pytorch.py --bench build/apps/bench --model mobilenet-1.0-128 --batch-size 16
    apps/bench/train_vs_pytorch.py --bench build/apps/bench --model alexnet --batch-size 16
    apps/bench/train_vs_pytorch.py --pytorch-only --device cuda --tf32 off,on --model cifar --batch-size 128
"""
import argparse
import re
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn

MOBILENET_BLOCKS = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
                    (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]


def lenet(classes):
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(16, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(16 * 7 * 7, 500), nn.ReLU(), nn.Linear(500, classes))


def cifar(classes):
    # models/cifar_net.cpp: Li et al.'s conv part (pools padded by 1: 24 -> 12 -> 6), TF's classifier.
    return nn.Sequential(
        nn.Conv2d(3, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
        nn.Conv2d(64, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1),
        nn.Flatten(), nn.Linear(64 * 6 * 6, 384), nn.ReLU(), nn.Linear(384, 192), nn.ReLU(),
        nn.Linear(192, classes))


def alexnet(classes):
    # nn.LocalResponseNorm divides alpha by the size, as ops/lrn.h does.
    lrn = lambda: nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0)
    conv = lambda cin, cout, kernel, stride=1, padding=0: [
        nn.Conv2d(cin, cout, kernel, stride, padding), nn.ReLU()]
    fc = lambda cin: [nn.Linear(cin, 4096), nn.ReLU(), nn.Dropout(0.5)]
    return nn.Sequential(
        *conv(3, 96, 11, 4), lrn(), nn.MaxPool2d(3, 2),
        *conv(96, 256, 5, padding=2), lrn(), nn.MaxPool2d(3, 2),
        *conv(256, 384, 3, padding=1), *conv(384, 384, 3, padding=1),
        *conv(384, 256, 3, padding=1), nn.MaxPool2d(3, 2),
        nn.Flatten(), *fc(256 * 6 * 6), *fc(4096), nn.Linear(4096, classes))


def mobilenet_config(name):
    """(width, resolution) of "mobilenet[-WIDTH[-RESOLUTION]]", as models/mobilenet.cpp reads it."""
    parts = name.split("-")
    width = float(parts[1]) if len(parts) > 1 else 1.0
    side = int(parts[2]) if len(parts) > 2 else 224
    return width, side


def conv_bn(cin, cout, kernel, stride, groups=1):
    return [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU6(inplace=True)]


def mobilenet(width, classes):
    scaled = lambda c: max(8, int(c * width))
    layers = conv_bn(3, scaled(32), 3, 2)
    cin = scaled(32)
    for cout, stride in MOBILENET_BLOCKS:
        layers += conv_bn(cin, cin, 3, stride, groups=cin) + conv_bn(cin, scaled(cout), 1, 1)
        cin = scaled(cout)
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))


def build(model):
    if model == "lenet":
        return lenet(10), (1, 28, 28), 10
    if model == "cifar":
        return cifar(10), (3, 24, 24), 10
    if model == "alexnet":
        return alexnet(1000), (3, 227, 227), 1000
    if model.startswith("mobilenet"):
        width, side = mobilenet_config(model)
        return mobilenet(width, 1000), (3, side, side), 1000
    sys.exit(f"unknown model {model} (lenet, cifar, alexnet, mobilenet[-WIDTH[-RESOLUTION]])")


def torch_images_per_s(model_name, batch, warmup, steps, device="cpu"):
    torch.manual_seed(1)
    model, shape, classes = build(model_name)
    model = model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    x = (torch.rand(batch, *shape) * 2 - 1).to(device)
    y = torch.randint(0, classes, (batch,)).to(device)
    # A step's queued GPU work belongs to its time, as bench plans synchronises its steps.
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
        sync()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return batch / statistics.median(times)


def set_gpu_options(tf32):
    """fp32 with cuDNN's own autotuner on, TF32 tensor-core maths as asked."""
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def pytorch_only(args):
    """A line `result pytorch ... images_per_s=X` per --tf32 setting: the median over rounds of
    each round's median step."""
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: this PyTorch sees no GPU (torch.cuda.is_available() is False)")
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else f"{torch.get_num_threads()} CPU threads"
    print(f"# torch {torch.__version__} on {where}", flush=True)
    for tf32 in args.tf32.split(","):
        if args.device == "cuda":
            set_gpu_options(tf32 == "on")
        rates = [torch_images_per_s(args.model, args.batch_size, args.warmup, args.steps, args.device)
                 for _ in range(args.rounds)]
        print(f"result pytorch model={args.model} device={args.device} batch={args.batch_size} "
              f"tf32={tf32 if args.device == 'cuda' else 'n/a'} torch={torch.__version__} "
              f"images_per_s={statistics.median(rates):.1f}", flush=True)


def tunecnn_images_per_s(args):
    _, _, classes = build(args.model)
    command = [args.bench, "train", "--model", args.model, "--batch-size", str(args.batch_size),
               "--classes", str(classes), "--threads", str(args.threads), "--warmup", str(args.warmup),
               "--steps", str(args.steps), "--tune", args.tune]
    if args.tune_cache:
        command += ["--tune-cache", args.tune_cache]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    match = re.search(r"images_per_s=([0-9.]+)", out)
    if not match:
        sys.exit(f"unexpected output from {args.bench}:\n{out}")
    return float(match.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default="build/apps/bench", help="path to tunecnn's bench app")
    parser.add_argument("--model", default="lenet", help="lenet, cifar, alexnet or mobilenet[-WIDTH[-RESOLUTION]]")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--tune", default="cached", help="tunecnn's --tune policy (off, cached, full)")
    parser.add_argument("--tune-cache", default="", help="tunecnn's tuning cache (default: its own)")
    parser.add_argument("--pytorch-only", action="store_true",
                        help="time PyTorch alone and print one result line (no tunecnn side)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="PyTorch's device; cuda needs --pytorch-only (tunecnn's GPU side is "
                             "bench plans --device cuda)")
    parser.add_argument("--tf32", default="off", choices=["off", "on", "off,on"],
                        help="with --device cuda: TF32 tensor-core maths in cuDNN and cuBLAS; off,on: "
                             "a result line for each")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)  # PyTorch defaults to 1 thread on this machine
    if args.pytorch_only:
        pytorch_only(args)
        return
    if args.device != "cpu":
        parser.error("--device cuda needs --pytorch-only: bench train runs on the CPU")

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {args.model}, batch {args.batch_size}")
    print("round  tunecnn img/s  pytorch img/s  ratio")
    ours, theirs = [], []
    for r in range(args.rounds):
        ours.append(tunecnn_images_per_s(args))
        theirs.append(torch_images_per_s(args.model, args.batch_size, args.warmup, args.steps))
        print(f"{r + 1:5d}  {ours[-1]:13.1f}  {theirs[-1]:13.1f}  {ours[-1] / theirs[-1]:5.2f}", flush=True)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(f"median {a:13.1f}  {b:13.1f}  {a / b:5.2f}")


if __name__ == "__main__":
    main()
