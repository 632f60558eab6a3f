"""The CLI the parity tests compare against: $ROOFLINE_CLI (ctest sets it to
the built program), else the one the package finds beside the build tree."""

import json
import os
import struct
import subprocess

import numpy as np
import pytest


@pytest.fixture(scope="session")
def cli_path():
    path = os.environ.get("ROOFLINE_CLI")
    if path:
        assert os.access(path, os.X_OK), f"ROOFLINE_CLI={path} is not a program"
        return path
    from roofline._tools import find_program
    path = find_program("roofline")
    if path is None:
        pytest.skip("the roofline CLI is not built (set ROOFLINE_CLI)")
    return path


@pytest.fixture(scope="session")
def cli(cli_path):
    """cli("predict", "--model", "x", ...) -> the parsed --json document."""

    def run(*args):
        done = subprocess.run([cli_path, *map(str, args), "--json"], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return run


@pytest.fixture()
def checkpoint(tmp_path):
    """A small .safetensors file: a Gaussian weight with an outlier channel, and a 1-D
    tensor the analysis skips."""
    rng = np.random.default_rng(7)
    w = rng.normal(0, 0.02, size=(64, 256)).astype(np.float32)
    w[:, 3] *= 80
    bias = np.zeros(128, dtype=np.float32)
    header = json.dumps({
        "layer.weight": {"dtype": "F32", "shape": [64, 256], "data_offsets": [0, w.nbytes]},
        "layer.bias": {"dtype": "F32", "shape": [128], "data_offsets": [w.nbytes, w.nbytes + bias.nbytes]},
    }).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + w.tobytes() + bias.tobytes())
    return path
