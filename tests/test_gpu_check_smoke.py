"""benchmarks/gpu_check.py (the one-call GPU check the lead runs on a CUDA machine) runs end to end on
the CPU with --smoke and writes its JSON; the NumPy process-pool part is left out here (worker start-up
is slow on a shared machine; it is the project's ``processes`` executor, tested in tests/attacks)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_check_smoke_on_cpu(tmp_path):
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "check.json"
    code = module.main(["--smoke", "--out", str(out), "--parts", "fts_device,gaussian,pilot_grid"])
    results = json.loads(out.read_text())
    assert code == 0, results
    assert results["device"] == "cpu" and results["torch"]
    assert results["fts_device"]["runs"] == 8 and results["fts_device"]["runs_per_second"] > 0
    gaussian = results["gaussian"]
    assert gaussian["trials_per_world"] == 1_100_000 and gaussian["reduction"] == "counts"
    assert gaussian["pilot_trials_per_world"] > 0 and 0 < gaussian["clopper_pearson"] < 2.0 + 1e-9
    assert gaussian["pilot_on_device"] is False  # a cpu keeps the host path
    pilot = results["pilot_grid"]  # the device path's code (torch on the cpu) against NumPy's
    assert pilot["scores_per_world"] == 100_000 and pilot["grids_identical"] is True
