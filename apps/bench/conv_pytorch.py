#!/usr/bin/python3
"""The PyTorch side of `bench conv`: times one convolution layer and direction per request.

`bench conv` starts this script once (--serve) and feeds it one layer and direction per line, so
the two sides alternate layer by layer and share the machine's noise. Every tensor is float32,
NCHW and contiguous, made once per request. The directions:
  fwd          torch.nn.functional.conv2d(x, w, None, stride, padding, 1, groups)
  bwd_data     torch.ops.aten.convolution_backward(dy, x, w, ..., output_mask=[True, False, False])
  bwd_weights  torch.ops.aten.convolution_backward(dy, x, w, ..., output_mask=[False, True, False])
Timing mirrors the C++ side (apps/bench/repeat_policy.cpp): warm-up calls, then timed calls until
the median settles, a time cap is spent or a run count is reached; the reply is the median.

Peak memory of one forward call ("peak" requests) is measured in a fresh child process, so that
nothing earlier requests left in the heap hides or inflates it:
  1. the child runs with MALLOC_MMAP_THRESHOLD_=65536, so glibc serves every buffer above 64 KiB
     with its own mmap and gives it back on free (resident memory then follows live buffers);
  2. it creates the input and weight, and runs one warm-up forward and drops its output, so
     first-call costs (library code paged in, OpenMP threads, oneDNN's kernel caches) are not
     counted;
  3. it resets the peak resident set (writes "5" to /proc/self/clear_refs, which sets VmHWM to the
     current VmRSS), runs one forward and keeps the output, and reads VmHWM;
  4. peak = input bytes + weight bytes + (VmHWM after - VmHWM after the reset).
This is comparable to tunecnn's peak (its allocator's bytes for input, weight, output and
workspace). Caveats: resident memory counts 4 KiB pages that were touched, not bytes requested (a
workspace allocated but only partly written counts partly); anything else the process touches
during the call (Python objects, small heap blocks that reuse freed space) is counted or hidden
alike; oneDNN's weight or layout caches kept from the warm-up are not counted.

Standalone, for one request:
    /usr/bin/python3 apps/bench/conv_pytorch.py --threads 2 --once "time fwd 8 3 227 227 96 11 11 4 4 0 0 1 1 5 50 1 0.02"
    /usr/bin/python3 apps/bench/conv_pytorch.py --threads 2 --once "peak 8 3 227 227 96 11 11 4 4 0 0 1"
"""
import argparse
import gc
import os
import statistics
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as error:  # reported to `bench conv`, which then runs without PyTorch
    torch = None
    IMPORT_ERROR = f"cannot import torch ({error}); install python3-torch and run /usr/bin/python3"

SETTLE_LOOKBACK = 2  # as kSettleLookback in apps/bench/repeat_policy.h
GEOMETRY = ("mb", "ic", "ih", "iw", "oc", "kh", "kw", "sh", "sw", "ph", "pw", "g")


def parse_geometry(fields):
    if len(fields) != len(GEOMETRY):
        raise ValueError(f"expected {len(GEOMETRY)} geometry fields, got {len(fields)}")
    return dict(zip(GEOMETRY, map(int, fields)))


def output_size(p):
    return ((p["ih"] + 2 * p["ph"] - p["kh"]) // p["sh"] + 1,
            (p["iw"] + 2 * p["pw"] - p["kw"]) // p["sw"] + 1)


def make_tensors(p):
    torch.manual_seed(1)
    x = torch.randn(p["mb"], p["ic"], p["ih"], p["iw"])
    w = torch.randn(p["oc"], p["ic"] // p["g"], p["kh"], p["kw"])
    return x, w


def conv_call(direction, p):
    """A no-argument function that runs one call of the direction on fresh tensors."""
    x, w = make_tensors(p)
    stride, padding, groups = (p["sh"], p["sw"]), (p["ph"], p["pw"]), p["g"]
    if direction == "fwd":
        return lambda: F.conv2d(x, w, None, stride, padding, 1, groups)
    dy = torch.randn(p["mb"], p["oc"], *output_size(p))
    mask = {"bwd_data": [True, False, False], "bwd_weights": [False, True, False]}.get(direction)
    if mask is None:
        raise ValueError(f"unknown direction '{direction}'")
    return lambda: torch.ops.aten.convolution_backward(
        dy, x, w, None, list(stride), list(padding), [1, 1], False, [0, 0], groups, mask)


def repeats_done(times, min_repeats, max_repeats, max_seconds, settle):
    """The stopping rule of apps/bench/repeat_policy.cpp, line for line."""
    runs = len(times)
    if runs == 0:
        return False
    if runs >= max_repeats or sum(times) >= max_seconds:
        return True
    if runs < max(min_repeats, SETTLE_LOOKBACK + 1):
        return False
    now, before = statistics.median(times), statistics.median(times[:-SETTLE_LOOKBACK])
    return abs(now - before) <= settle * now


def seconds_of(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def time_request(fields):
    direction, p = fields[0], parse_geometry(fields[1:13])
    warmup, min_repeats, max_repeats = map(int, fields[13:16])
    max_seconds, settle = map(float, fields[16:18])
    call = conv_call(direction, p)
    with torch.no_grad():
        for _ in range(warmup):
            if seconds_of(call) > max_seconds:
                break
        times = []
        while not repeats_done(times, min_repeats, max_repeats, max_seconds, settle):
            times.append(seconds_of(call))
    ms = [1e3 * t for t in times]
    return f"ok {statistics.median(ms):.6f} {min(ms):.6f} {max(ms):.6f} {len(ms)}"


def status_bytes(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # the kernel reports kB
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure_forward_peak(p):
    """Steps 2-4 of the method in the module docstring; runs in a fresh process."""
    x, w = make_tensors(p)
    args = (None, (p["sh"], p["sw"]), (p["ph"], p["pw"]), 1, p["g"])
    with torch.no_grad():
        warm = F.conv2d(x, w, *args)
        del warm
        gc.collect()
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        before = status_bytes("VmHWM")
        y = F.conv2d(x, w, *args)
        delta = max(0, status_bytes("VmHWM") - before)
    tensors = x.nelement() * x.element_size() + w.nelement() * w.element_size()
    del y
    return f"ok {tensors + delta} {tensors} {delta}"


def peak_request(fields, threads):
    """Step 1: a fresh child with mmap for every buffer above 64 KiB."""
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--threads", str(threads), "--once",
         " ".join(["peak-here"] + fields)], env=env, capture_output=True, text=True)
    reply = child.stdout.strip().splitlines()
    if child.returncode != 0 or not reply:
        return f"error peak child failed: {child.stderr.strip().splitlines()[-1:] or child.returncode}"
    return reply[-1]


def answer(line, threads):
    fields = line.split()
    try:
        if fields[0] == "time":
            return time_request(fields[1:])
        if fields[0] == "peak":
            return peak_request(fields[1:], threads)
        if fields[0] == "peak-here":
            return measure_forward_peak(parse_geometry(fields[1:]))
        return f"error unknown request '{fields[0]}'"
    except Exception as error:  # one bad request must not end the whole bench
        return f"error {type(error).__name__}: {error}".replace("\n", " ")


def serve(threads):
    print(f"ready torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    for line in sys.stdin:
        if not line.strip() or line.split()[0] == "quit":
            break
        print(answer(line, threads), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    parser.add_argument("--serve", action="store_true", help="answer requests on stdin")
    parser.add_argument("--once", metavar="REQUEST", help="answer one request and exit")
    args = parser.parse_args()
    if torch is None:
        print(f"unavailable {IMPORT_ERROR}", flush=True)
        return 0
    torch.set_num_threads(args.threads)  # PyTorch defaults to 1 thread on this machine
    if args.serve:
        serve(args.threads)
    elif args.once:
        print(answer(args.once, args.threads), flush=True)
    else:
        parser.error("give --serve or --once REQUEST")
    return 0


if __name__ == "__main__":
    sys.exit(main())
