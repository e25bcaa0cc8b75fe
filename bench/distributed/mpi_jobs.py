"""What the distributed benchmarks share: mpirun and its environment, and
make-test-model's random BF16 models of real shapes."""
import os
import shutil
import subprocess
import sys


def mpirun_and_env():
    """mpirun's path (exits when Open MPI is not installed), and an environment that lets it run as root."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.exit("mpirun is not installed (Debian's openmpi-bin)")
    return mpirun, dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


MIXTURE_PRESETS = ("olmoe-1b-7b", "deepseek-v2-lite")


def test_model(binary, models, preset, num_layers=None):
    """The directory of make-test-model's `preset` under `models` (llama-family, or a mixture of experts of
    its own architecture), with `num_layers` layers if given, written if missing."""
    path = os.path.join(models, preset + (f"-{num_layers}-layers" if num_layers else ""))
    if not os.path.isfile(os.path.join(path, "config.json")):
        arch = [] if preset in MIXTURE_PRESETS else ["--arch", "llama"]
        layers = ["--num-layers", str(num_layers)] if num_layers else []
        subprocess.run([binary, "make-test-model", *arch, "--preset", preset, *layers, "--dtype", "bf16",
                        "--out", path], check=True)
    return path
