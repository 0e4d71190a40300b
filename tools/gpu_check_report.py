"""The report of a gpu-check run: summary.md, steps.csv and results.csv in the report folder,
read off the steps' logs, gtest XML and CSVs. Written again after every step, so it always says
how far the run got. Everything here reads files; nothing runs a program."""
import csv
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

TRAIN_TARGET = 0.985  # test accuracy after 2 epochs of LeNet on MNIST
PLAN_TARGET = 1.2  # tuned plan over cuDNN alone, training images/s


@dataclass
class Run:
    out: Path
    mode: str
    emulated: bool
    buildinfo: str
    fingerprint: str  # `autotune fingerprint --device cuda`
    torch_device: object  # "cuda", "cpu" or None (no PyTorch)
    steps: list
    stopped: str = ""  # why nothing ran, if so
    seconds: float = 0.0


def result_fields(text, prefix="result "):
    """The key=value pairs of every `result ...` line of a log, one dict per line."""
    rows = []
    for line in text.splitlines():
        if line.startswith(prefix):
            rows.append(dict(re.findall(r"(\w+)=(\S+)", line[len(prefix):])))
    return rows


def read(path):
    return path.read_text(errors="replace") if path.exists() else ""


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def ratio(a, b):
    return a / b if a and b else None


def fmt(value, digits=1):
    return "-" if value is None else f"{value:.{digits}f}"


# ---- tests ----------------------------------------------------------------------------------


def test_results(folder):
    """[(file stem, tests, failures, skipped, [(test, message)])] from the gtest XML files."""
    results = []
    for xml in sorted(folder.glob("*.xml")):
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError as e:
            results.append((xml.stem, 0, 1, 0, [("(the XML)", f"unreadable: {e}")]))
            continue
        failed = []
        for case in root.iter("testcase"):
            for failure in case.findall("failure"):
                name = f"{case.get('classname')}.{case.get('name')}"
                failed.append((name, (failure.get("message") or failure.text or "").strip()))
        skipped = sum(1 for case in root.iter("testcase") if case.find("skipped") is not None)
        results.append((xml.stem, int(root.get("tests", 0)), len({n for n, _ in failed}), skipped, failed))
    return results


def tests_section(run):
    results = test_results(run.out / "tests")
    if not results:
        return ["No test results (the tests step did not run, or wrote no XML: see logs/)."]
    total = sum(r[1] for r in results)
    failures = sum(r[2] for r in results)
    skipped = sum(r[3] for r in results)
    lines = [f"{total - failures - skipped} passed, {failures} failed, {skipped} skipped "
             f"(of {total}, in {len(results)} processes).", "",
             "| executable | tests | failed | skipped |", "|---|---:|---:|---:|"]
    lines += [f"| {stem} | {n} | {f} | {s} |" for stem, n, f, s, _ in results]
    listed = [(name, msg) for *_, failed in results for name, msg in failed][:40]
    if listed:
        lines += ["", "Failures (the first 40; whole messages in tests/*.xml and logs/):", ""]
        for name, msg in listed:
            first = " / ".join(msg.splitlines()[:4])[:400]
            lines.append(f"- `{name}`: {first}")
    if skipped and not failures:
        lines += ["", "Skipped tests skip for a reason their log gives (a GPU test skips without a GPU)."]
    return lines


# ---- training -------------------------------------------------------------------------------


def train_section(run):
    rows = list(csv.DictReader(io.StringIO(read(run.out / "csv" / "train.csv"))))
    if not rows:
        return ["No epoch finished (see logs/train.log)."]
    lines = ["| epoch | train loss | test accuracy | images/s | seconds |", "|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['epoch']} | {fmt(number(r['train_loss']), 4)} | {fmt(100 * number(r['test_acc']), 2)}% "
                     f"| {fmt(number(r['images_per_s']))} | {fmt(number(r['seconds']))} |")
    if run.mode != "smoke":
        final = number(rows[-1]["test_acc"])
        verdict = "met" if len(rows) >= 2 and final is not None and final >= TRAIN_TARGET else "NOT met"
        lines += ["", f"Target: >= {100 * TRAIN_TARGET:.1f}% test accuracy after 2 epochs: {verdict}."]
    return lines


# ---- whole networks -------------------------------------------------------------------------


def network_rows(run):
    """One dict per network: tunecnn's tuned and cuDNN-only plans and PyTorch's rows."""
    rows = []
    for step in run.steps:
        if not step.name.startswith("plans-") or step.status == "not run":
            continue
        model = step.name[len("plans-"):]
        plans = read(run.out / "logs" / f"{step.name}.log")
        gpu = next((r for r in result_fields(plans) if r.get("device") == "cuda"), {})
        main = next((r for r in result_fields(plans) if "model" in r), {})
        torch_rows = {r.get("tf32"): number(r.get("images_per_s"))
                      for r in result_fields(read(run.out / "logs" / f"pytorch-{model}.log"), "result pytorch ")}
        tuned = number(gpu.get("tuned_images_per_s"))
        cudnn = number(gpu.get("cudnn_own_images_per_s"))
        off = torch_rows.get("off") or torch_rows.get("n/a")
        on = torch_rows.get("on")
        rows.append({"model": model, "batch": main.get("batch", ""), "tuned_images_per_s": tuned,
                     "cudnn_only_images_per_s": cudnn, "tuned_over_cudnn_only": ratio(tuned, cudnn),
                     "pytorch_tf32_off_images_per_s": off, "pytorch_tf32_on_images_per_s": on,
                     "tuned_over_pytorch_tf32_off": ratio(tuned, off), "tuned_over_pytorch_tf32_on": ratio(tuned, on),
                     "profile_s": number(main.get("profile_s"))})
    return rows


def networks_section(run, rows):
    if not rows:
        return ["No network was planned (see logs/plans-*.log)."]
    torch_where = {"cuda": "PyTorch on this GPU", "cpu": "PyTorch on the CPU (it sees no GPU)",
                   None: "no PyTorch found"}[run.torch_device]
    lines = [f"Training images/s (median step), one batch of random data; {torch_where}, fp32, "
             "cudnn.benchmark on.", "",
             "| network | batch | tuned | cuDNN only | tuned / cuDNN | PyTorch TF32 off | tuned / PyTorch | "
             "PyTorch TF32 on | tuned / PyTorch TF32 | profiling s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['batch']} | {fmt(r['tuned_images_per_s'])} | "
                     f"{fmt(r['cudnn_only_images_per_s'])} | {fmt(r['tuned_over_cudnn_only'], 2)} | "
                     f"{fmt(r['pytorch_tf32_off_images_per_s'])} | {fmt(r['tuned_over_pytorch_tf32_off'], 2)} | "
                     f"{fmt(r['pytorch_tf32_on_images_per_s'])} | {fmt(r['tuned_over_pytorch_tf32_on'], 2)} | "
                     f"{fmt(r['profile_s'])} |")
    below = [r["model"] for r in rows if r["tuned_over_cudnn_only"] is not None and r["tuned_over_cudnn_only"] < PLAN_TARGET]
    unmeasured = [r["model"] for r in rows if r["tuned_over_cudnn_only"] is None]
    verdict = f"NOT met on {', '.join(below)}" if below else "met where measured" if unmeasured else "met"
    lines += ["", f"Target: tuned >= {PLAN_TARGET}x cuDNN only on every network: {verdict}"
                  + (f"; not measured on {', '.join(unmeasured)}." if unmeasured else ".")]
    return lines


# ---- benches --------------------------------------------------------------------------------

# The lines of a bench's log worth reading in the summary: its tables, not its progress.
PROGRESS = re.compile(r"^(bench \w+: \[|\$ |  measured |  \[)")


def bench_excerpt(text, limit=45):
    lines = [l for l in text.splitlines() if not PROGRESS.match(l)]
    mec = next((i for i, l in enumerate(lines) if l.startswith("MEC against")), None)
    if mec is not None:  # bench conv: the MEC paper's comparison is the part to read
        lines = lines[mec:]
    return lines[-limit:]


def benches_section(run):
    lines = []
    for step in run.steps:
        if step.group != "benches":
            continue
        text = read(run.out / "logs" / f"{step.name}.log")
        if not text:
            continue
        lines += [f"### {step.name} ({step.status})", "", "```", *bench_excerpt(text), "```", ""]
    return lines or ["No bench ran."]


# ---- the files ------------------------------------------------------------------------------


def fingerprint_lines(run):
    wanted = ("name", "compute_capability", "sm_count", "memory_bytes", "driver", "cuda_runtime", "cublas", "cudnn")
    fields = dict(re.findall(r"^  (\w+): (.*)$", run.fingerprint.split("gpu ", 1)[-1], re.M))
    if not fields.get("name"):
        return ["GPU: none usable (environment.txt says why)"]
    return ["GPU: " + ", ".join(f"{k} {fields[k]}" for k in wanted if k in fields)]


def summary(run, rows):
    title = f"# tunecnn gpu-check ({run.mode})"
    lines = [title, ""]
    if run.emulated:
        lines += ["> **EMULATED**: this package runs the GPU code on the host's CUDA emulation. It checks "
                  "results, not speed: no time in this report is a GPU's time.", ""]
    lines += fingerprint_lines(run)
    lines += [next((l for l in run.buildinfo.splitlines() if l.startswith("commit")), "commit: unknown"),
              f"Environment, library folders and nvidia-smi: environment.txt.", ""]
    if run.stopped:
        lines += [f"**Stopped before any step:** {run.stopped}", ""]
    done = [s for s in run.steps if s.status != "not run"]
    passed = sum(s.status == "passed" for s in run.steps)
    lines += [f"## Steps: {passed} of {len(run.steps)} passed"
              + (f", {run.seconds:.0f} s in all" if run.seconds else f" ({len(done)} run so far)"), "",
              "| step | status | seconds | limit | log |", "|---|---|---:|---:|---|"]
    for s in run.steps:
        logs = ", ".join(f"logs/{c.name}.log" for c in s.commands[:2]) + (", ..." if len(s.commands) > 2 else "")
        lines.append(f"| {s.name} | {s.status} | {fmt(s.seconds) if s.status != 'not run' else '-'} | {s.limit} | {logs} |")
    lines += ["", "## Tests", ""] + tests_section(run)
    lines += ["", "## Training LeNet on MNIST (`train --device cuda`)", ""] + train_section(run)
    lines += ["", "## Whole networks: tuned plan, cuDNN alone, PyTorch", ""] + networks_section(run, rows)
    lines += ["", "## Benches", ""] + benches_section(run)
    return "\n".join(lines) + "\n"


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: ("" if r.get(k) is None else r[k]) for k in header})


def write(run):
    rows = network_rows(run)
    write_csv(run.out / "steps.csv", ["step", "status", "seconds", "limit", "command"],
              [{"step": s.name, "status": s.status, "seconds": f"{s.seconds:.1f}", "limit": s.limit,
                "command": " ".join(s.commands[0].argv) if s.commands else ""} for s in run.steps])
    if rows:
        write_csv(run.out / "results.csv", list(rows[0].keys()), rows)
    partial = run.out / "summary.md.partial"
    partial.write_text(summary(run, rows))
    partial.replace(run.out / "summary.md")
