"""tools/check-includes on small fake trees: it names each include against the dependency
direction, passes a clean tree, honours the allow-list and fails on a stale entry in it."""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "tools" / "check-includes"


class CheckIncludes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        # A clean tree: every arrow points the right way.
        self.write("core/a.h", '#include <vector>\n#include "core/b.h"\n')
        self.write("core/b.h", "")
        self.write("ops/blas.h", '#include "core/a.h"\n#include "ops/conv/problem.h"\n')
        self.write("ops/conv/problem.h", '#include "ops/blas.h"\n#include "ops/layout/to.h"\n')
        self.write("ops/layout/to.h", '#include "core/a.h"\n')
        self.write("models/net.cpp", '#include "ops/conv/problem.h"\n#include "models/net.h"\n')
        self.write("models/net.h", "")
        self.write("apps/bench/run.cpp", '#include "apps/training/t.h"\n#include "apps/common/cli.h"\n')
        self.write("apps/training/t.h", '#include "apps/common/cli.h"\n')
        self.write("apps/common/cli.h", '#include "models/net.h"\n')
        self.write("apps/train.cpp", '#include "apps/bench/run.h"\n')
        self.write("tests/test_a.cpp", '#include "apps/bench/run.h"\n')  # not checked

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, path, text):
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(text)

    def check(self):
        result = subprocess.run([sys.executable, str(SCRIPT), "--root", str(self.root)],
                                capture_output=True, text=True)
        return result.returncode, result.stdout

    def test_clean_tree_passes(self):
        code, out = self.check()
        self.assertEqual(code, 0, out)
        self.assertIn("11 files", out)

    def test_back_include_fails_naming_file_and_folders(self):
        self.write("core/a.h", '#include "core/b.h"\n#include "ops/b.h"\n')
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertIn("core/a.h:2: includes ops/b.h (folder core may not include folder ops)", out)

    def test_sibling_rules(self):
        self.write("models/x.h", '#include "datasets/y.h"\n')
        self.write("ops/pool/p.h", '#include "ops/conv/problem.h"\n')
        self.write("apps/training/t.h", '#include "apps/bench/run.h"\n')
        self.write("apps/bench/b.h", '#include "apps/autotune_cli/c.h"\n')
        self.write("ops/conv/rel.h", '#include "../pool/p.h"\n')  # resolved like the compiler
        code, out = self.check()
        self.assertEqual(code, 1)
        for line in ["models/x.h:1: includes datasets/y.h (folder models may not include folder datasets)",
                     "ops/pool/p.h:1: includes ops/conv/problem.h (folder ops/pool may not include folder ops/conv)",
                     "apps/training/t.h:1: includes apps/bench/run.h",
                     "apps/bench/b.h:1: includes apps/autotune_cli/c.h",
                     "ops/conv/rel.h:1: includes ops/pool/p.h"]:
            self.assertIn(line, out)

    def test_apps_common_includes_no_other_apps_folder(self):
        self.write("apps/autotune_cli/a.cpp", '#include "apps/common/cli.h"\n')  # allowed
        # allowed: profile --memory-budget predicts a training step's memory
        self.write("apps/autotune_cli/m.cpp", '#include "apps/training/step_memory.h"\n')
        self.write("apps/common/c.cpp", '#include "apps/training/t.h"\n')
        self.write("apps/autotune_cli/b.cpp", '#include "apps/bench/b.h"\n')
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertNotIn("apps/autotune_cli/a.cpp", out)
        self.assertNotIn("apps/autotune_cli/m.cpp", out)
        for line in ["apps/common/c.cpp:1: includes apps/training/t.h "
                     "(folder apps/common may not include folder apps/training)",
                     "apps/autotune_cli/b.cpp:1: includes apps/bench/b.h"]:
            self.assertIn(line, out)

    def test_allow_list_and_stale_entry(self):
        self.write("ops/pool/p.h", '#include "ops/conv/problem.h"\n')
        self.write("tools/check-includes.allow",
                   "# known\nops/pool/p.h  ops/conv/problem.h  # shared vocabulary\n")
        code, out = self.check()
        self.assertEqual(code, 0, out)
        self.write("ops/pool/p.h", '#include "ops/blas.h"\n')  # fixed: the entry is now stale
        code, out = self.check()
        self.assertEqual(code, 1)
        self.assertIn("check-includes.allow:2: stale exception: ops/pool/p.h", out)

    def test_allow_entry_needs_a_reason(self):
        self.write("tools/check-includes.allow", "ops/pool/p.h  ops/conv/problem.h\n")
        code, _ = self.check()
        self.assertEqual(code, 2)


if __name__ == "__main__":
    unittest.main()
