"""gpu-check's plan and report, without a GPU: the steps each mode runs and their limits, and the
report read off logs, gtest XML and CSVs written here as the real programs write them."""
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent / "tools"
sys.path.insert(0, str(TOOLS))
import gpu_check_report as report  # noqa: E402


def load_gpu_check():
    loader = importlib.machinery.SourceFileLoader("gpu_check", str(TOOLS / "gpu-check"))
    spec = importlib.util.spec_from_loader("gpu_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


gpu_check = load_gpu_check()


class FakePackage:
    def __init__(self, root, executables):
        self.root = root
        self.bin = root / "bin"
        self.tests = root / "tests"
        self.data = root / "share" / "tunecnn" / "data"
        self.executables = executables

    def test_executables(self):
        return self.executables


def plan(mode, python="python3", torch_device="cuda"):
    package = FakePackage(Path("/pkg"), gpu_check.GPU_TESTS + list(gpu_check.MIXED_SUITES))
    return gpu_check.plan_steps(package, mode, Path("/out"), python, torch_device)


class PlanTest(unittest.TestCase):
    def test_full_mode_fits_eight_minutes_and_runs_every_step_the_issue_lists(self):
        steps = plan("full")
        self.assertLessEqual(sum(s.limit for s in steps), 8 * 60)
        names = [s.name for s in steps]
        for name in ["tests", "train", "conv-mec", "conv-li", "layout", "pool", "softmax", "depthwise",
                     "calibrate", "plans-lenet", "plans-cifar", "plans-alexnet", "plans-mobilenet-1.0-128",
                     "pytorch-lenet", "pytorch-mobilenet-1.0-128", "memory-mobilenet-1.0-128"]:
            self.assertIn(name, names)
        self.assertEqual(names[:2], ["tests", "train"])  # a failing kernel makes timings meaningless

    def test_full_mode_runs_every_test_and_shards_the_conv_suite(self):
        tests = plan("full")[0].commands
        gpu_suites = [c for c in tests if c.name.split(".")[0] in gpu_check.GPU_TESTS]
        self.assertTrue(all("--gtest_filter=*" in c.argv for c in gpu_suites))
        mixed = [c for c in tests if c.name in gpu_check.MIXED_SUITES]
        self.assertEqual(len(mixed), len(gpu_check.MIXED_SUITES))
        self.assertTrue(all("--gtest_filter=*Gpu*" in c.argv for c in mixed), "only their GPU tests")
        shards = [c for c in tests if c.name.startswith("test_cuda_conv.")]
        self.assertEqual(len(shards), gpu_check.CONV_SHARDS)
        self.assertEqual({c.env["GTEST_SHARD_INDEX"] for c in shards}, {str(i) for i in range(gpu_check.CONV_SHARDS)})

    def test_quick_and_smoke_run_the_ci_subset(self):
        for mode in ("quick", "smoke"):
            conv = next(c for c in plan(mode)[0].commands if c.name == "test_cuda_conv")
            self.assertIn("--gtest_filter=" + gpu_check.SUBSET_FILTERS["test_cuda_conv"], conv.argv)

    def test_smoke_leaves_alexnets_gpu_step_out_and_quick_keeps_it(self):
        def training_filter(mode):
            argv = next(c for c in plan(mode)[0].commands if c.name == "test_cuda_training").argv
            return next(a for a in argv if a.startswith("--gtest_filter="))
        self.assertEqual(training_filter("smoke"),
                         "--gtest_filter=" + gpu_check.SUBSET_FILTERS["test_cuda_training"] + "-*/alexnet")
        self.assertNotIn("alexnet", training_filter("quick"))

    def test_suites_keeps_only_the_named_test_executables_and_refuses_unknown_ones(self):
        steps = gpu_check.select_suites(plan("smoke"), "test_cuda_ops,test_cuda_conv")
        self.assertEqual([c.name for c in steps[0].commands], ["test_cuda_ops", "test_cuda_conv"])
        self.assertIn("train", [s.name for s in steps], "other steps stay")
        full = gpu_check.select_suites(plan("full"), "test_cuda_conv")
        self.assertEqual(len(full[0].commands), gpu_check.CONV_SHARDS, "every shard of a sharded suite")
        with self.assertRaises(SystemExit):
            gpu_check.select_suites(plan("smoke"), "test_cuda_ops,test_frobnicate")

    def test_smoke_leaves_calibrate_to_the_gpu(self):
        for mode in ("full", "quick", "smoke"):
            self.assertEqual("calibrate" in [s.name for s in plan(mode)], mode != "smoke", mode)

    def test_pytorch_rows_take_both_tf32_settings_on_a_gpu_and_one_on_the_cpu(self):
        on_gpu = next(s for s in plan("full") if s.name == "pytorch-cifar").commands[0].argv
        self.assertEqual(on_gpu[on_gpu.index("--tf32") + 1], "off,on")
        on_cpu = next(s for s in plan("smoke", torch_device="cpu") if s.name == "pytorch-lenet").commands[0].argv
        self.assertEqual(on_cpu[on_cpu.index("--tf32") + 1], "off")
        self.assertFalse([s for s in plan("full", python=None) if s.group == "pytorch"])

    def test_only_takes_steps_and_groups_and_refuses_unknown_names(self):
        steps = plan("full")
        self.assertEqual([s.name for s in gpu_check.select(steps, "tests,plans-cifar")], ["tests", "plans-cifar"])
        self.assertEqual({s.group for s in gpu_check.select(steps, "benches")}, {"benches"})
        with self.assertRaises(SystemExit) as stop:
            gpu_check.select(steps, "tests,frobnicate")
        self.assertIn("frobnicate", str(stop.exception))


class RunStepTest(unittest.TestCase):
    def run_step(self, commands, limit):
        with tempfile.TemporaryDirectory() as logs:
            step = gpu_check.Step("s", "tests", limit, [gpu_check.Command(f"c{i}", argv) for i, argv in enumerate(commands)])
            gpu_check.run_step(step, dict(os.environ), Path(logs))
            return step, {p.name: p.read_text() for p in Path(logs).iterdir()}

    def test_commands_run_together_and_each_exit_status_counts(self):
        step, logs = self.run_step([["sh", "-c", "echo hello"], ["true"]], 10)
        self.assertEqual(step.status, "passed")
        self.assertIn("hello", logs["c0.log"])
        self.assertEqual(self.run_step([["true"], ["sh", "-c", "exit 3"]], 10)[0].status, "failed: c1 (exit 3)")
        step, logs = self.run_step([["/nonexistent/program"]], 10)
        self.assertEqual(step.status, "failed: c0 (could not start)")

    def test_a_hang_costs_only_the_limit_and_its_whole_process_group_is_stopped(self):
        with tempfile.TemporaryDirectory() as d:
            marker = Path(d) / "child-lived"
            # The grandchild would write the marker after the limit unless its group is killed.
            step, logs = self.run_step([["sh", "-c", f"(sleep 3; touch {marker}) & sleep 60"]], 1)
            self.assertLess(step.seconds, 10)
            self.assertEqual(step.status, "timed out (c0)")
            self.assertIn("stopped at the step's limit of 1 s", logs["c0.log"])
            time.sleep(3)
            self.assertFalse(marker.exists())


GTEST_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1" disabled="0" errors="0" name="AllTests">
  <testsuite name="CudaOps" tests="3" failures="1">
    <testcase name="Relu" classname="CudaOps"/>
    <testcase name="Pool" classname="CudaOps"><skipped message="no GPU"/></testcase>
    <testcase name="Softmax" classname="CudaOps">
      <failure message="test_cuda_ops.cpp:10&#x0A;Expected equality of these values: 1 vs 2" type=""/>
    </testcase>
  </testsuite>
</testsuites>
"""


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.out = Path(self.dir.name)
        for sub in ("logs", "tests", "csv"):
            (self.out / sub).mkdir()

    def tearDown(self):
        self.dir.cleanup()

    def run_of(self, steps, emulated=False, torch_device="cuda"):
        return report.Run(out=self.out, mode="full", emulated=emulated, buildinfo="tunecnn 0.1.0\ncommit: abc123\n",
                          fingerprint="gpu cuda-1\n  name: NVIDIA H100 80GB HBM3\n  cudnn: 9.13.0\n",
                          torch_device=torch_device, steps=steps)

    def step(self, name, group, status="passed"):
        return gpu_check.Step(name, group, 10, [gpu_check.Command(name, ["x"])], status, 1.0)

    def test_failed_tests_are_named_with_their_message(self):
        (self.out / "tests" / "test_cuda_ops.xml").write_text(GTEST_XML)
        lines = "\n".join(report.tests_section(self.run_of([])))
        self.assertIn("1 passed, 1 failed, 1 skipped (of 3, in 1 processes)", lines)
        self.assertIn("`CudaOps.Softmax`: test_cuda_ops.cpp:10 / Expected equality", lines)

    def test_training_target_is_judged_on_the_last_of_two_epochs(self):
        header = "epoch,train_loss,train_acc,test_loss,test_acc,test_top5,images_per_s,seconds,lr\n"
        (self.out / "csv" / "train.csv").write_text(header + "1,0.2,0.9,0.1,0.980,1,5000,10,0.01\n"
                                                             "2,0.1,0.95,0.05,0.9861,1,5000,10,0\n")
        self.assertIn("after 2 epochs: met", "\n".join(report.train_section(self.run_of([]))))
        (self.out / "csv" / "train.csv").write_text(header + "1,0.2,0.9,0.1,0.984,1,5000,10,0.01\n"
                                                             "2,0.1,0.95,0.05,0.9849,1,5000,10,0\n")
        self.assertIn("after 2 epochs: NOT met", "\n".join(report.train_section(self.run_of([]))))

    def test_networks_pair_each_plan_with_pytorch_and_judge_the_target(self):
        (self.out / "logs" / "plans-lenet.log").write_text(
            "result model=lenet batch=128 threads=2 tuned_step_ms=1.00 profile_s=3.50\n"
            "result device=cuda tuned_images_per_s=128000.0 cudnn_own_images_per_s=64000.0 cudnn_own_over_tuned=2.000\n")
        (self.out / "logs" / "pytorch-lenet.log").write_text(
            "# torch 2.11\nresult pytorch model=lenet device=cuda batch=128 tf32=off torch=2.11 images_per_s=100000.0\n"
            "result pytorch model=lenet device=cuda batch=128 tf32=on torch=2.11 images_per_s=160000.0\n")
        (self.out / "logs" / "plans-cifar.log").write_text(
            "result device=cuda tuned_images_per_s=1100.0 cudnn_own_images_per_s=1000.0\n")
        run = self.run_of([self.step("plans-lenet", "plans"), self.step("plans-cifar", "plans")])
        rows = report.network_rows(run)
        self.assertEqual(rows[0]["batch"], "128")
        self.assertAlmostEqual(rows[0]["tuned_over_cudnn_only"], 2.0)
        self.assertAlmostEqual(rows[0]["tuned_over_pytorch_tf32_off"], 1.28)
        self.assertAlmostEqual(rows[0]["tuned_over_pytorch_tf32_on"], 0.8)
        self.assertIsNone(rows[1]["pytorch_tf32_off_images_per_s"])
        self.assertIn("NOT met on cifar.", "\n".join(report.networks_section(run, rows)))
        (self.out / "logs" / "plans-cifar.log").write_text("Segmentation fault\n")
        rows = report.network_rows(run)
        self.assertIn("met where measured; not measured on cifar.", "\n".join(report.networks_section(run, rows)))
        run.steps.append(self.step("plans-alexnet", "plans", "not run"))
        self.assertEqual([r["model"] for r in report.network_rows(run)], ["lenet", "cifar"])

    def test_summary_says_emulated_and_is_written_atomically_with_the_csvs(self):
        (self.out / "logs" / "plans-lenet.log").write_text("result device=cuda tuned_images_per_s=10.0 "
                                                           "cudnn_own_images_per_s=5.0\n")
        (self.out / "logs" / "conv-mec.log").write_text("$ bench conv\nbench conv: [1/12] cv1 done\nlayer table\n"
                                                        "MEC against im2col_gemm and cuDNN\ncv1 row\nwrote x.csv\n")
        run = self.run_of([self.step("plans-lenet", "plans"), self.step("conv-mec", "benches"),
                           self.step("pool", "benches", "not run")], emulated=True)
        report.write(run)
        text = (self.out / "summary.md").read_text()
        self.assertIn("**EMULATED**", text)
        self.assertIn("GPU: name NVIDIA H100 80GB HBM3, cudnn 9.13.0", text)
        self.assertIn("## Steps: 2 of 3 passed (2 run so far)", text)
        self.assertIn("MEC against im2col_gemm and cuDNN\ncv1 row", text)
        self.assertNotIn("layer table", text)
        self.assertNotIn("[1/12]", text)
        self.assertFalse((self.out / "summary.md.partial").exists())
        self.assertIn("plans-lenet,passed,1.0,10,x", (self.out / "steps.csv").read_text())
        self.assertIn("lenet,,10.0,5.0,2.0", (self.out / "results.csv").read_text())


if __name__ == "__main__":
    unittest.main()
