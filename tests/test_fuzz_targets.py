"""tools/fuzz without building anything: its --help and --list work, a bad option is exit 2, and
every reader issue 30 names has a fuzz target with its source file, its committed seeds and its
place in fuzz/CMakeLists.txt, the target including the reader's header."""
import subprocess
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "fuzz"

# Each reader (its header) and the target that fuzzes it.
READERS = {
    "datasets/idx.h": "idx",
    "datasets/mnist.h": "idx",
    "datasets/cifar10.h": "cifar",
    "datasets/image_folder.h": "image",  # decode + resize through ImageFolderDataset
    "datasets/image_folder.h ": "image_folder",  # the labels file and per-file decode path
    "autotune/tuning_cache.h": "tuning_cache",
    "core/checkpoint.h": "checkpoint",
    "apps/training/train_command_line.h": "cli",
    "apps/autotune_cli/subcommands.h": "cli",
    "apps/bench/conv_options.h": "cli",
    "models/onnx_import.h": "onnx",  # built only with ONNX (libonnx-dev, libprotobuf-dev)
}


def run(*args):
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


class FuzzTool(unittest.TestCase):
    def test_help(self):
        result = run("--help")
        self.assertEqual(result.returncode, 0, result.stderr)
        for word in ("--time SECONDS", "--smoke", "fuzz/regressions", "Exit status"):
            self.assertIn(word, result.stdout)

    def test_bad_command_line_is_exit_2(self):
        self.assertEqual(run("--time", "0", "--no-build").returncode, 2)
        self.assertEqual(run("--only", "nonsense", "--no-build").returncode, 2)
        self.assertEqual(run("--frobnicate").returncode, 2)

    def test_a_target_the_build_left_out_is_an_error_only_when_asked_for(self):
        with tempfile.TemporaryDirectory() as build:
            (Path(build) / "fuzz").mkdir()
            (Path(build) / "fuzz" / "targets.txt").write_text("idx;cifar\n")
            result = run("--only", "onnx", "--no-build", "--build-dir", build)
            self.assertEqual(result.returncode, 1)
            self.assertIn("no onnx target", result.stderr)
            self.assertIn("libonnx-dev", result.stderr)

    def test_every_reader_has_a_target(self):
        listed = run("--list").stdout.split()
        cmake = (ROOT / "fuzz" / "CMakeLists.txt").read_text()
        for header, target in READERS.items():
            with self.subTest(reader=header.strip(), target=target):
                self.assertIn(target, listed)
                self.assertRegex(cmake, rf"TUNECNN_FUZZ_TARGETS[^)]*\b{target}\b")
                source = ROOT / "fuzz" / f"fuzz_{target}.cpp"
                self.assertIn(f'#include "{header.strip()}"', source.read_text())
                self.assertTrue(any((ROOT / "fuzz" / "corpus" / target).iterdir()), "no seeds")

    def test_regressions_belong_to_targets_and_corpus_stays_small(self):
        listed = set(run("--list").stdout.split())
        for folder in (ROOT / "fuzz" / "regressions").iterdir():
            self.assertIn(folder.name, listed)
        size = sum(f.stat().st_size for f in (ROOT / "fuzz").rglob("*") if f.is_file())
        self.assertLess(size, 1 << 20, "the committed corpus and regressions should stay under 1 MiB")


if __name__ == "__main__":
    unittest.main()
