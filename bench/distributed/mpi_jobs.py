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


def test_model(binary, models, preset):
    """The directory of make-test-model's llama-family `preset` under `models`, written if missing."""
    path = os.path.join(models, preset)
    if not os.path.isfile(os.path.join(path, "config.json")):
        subprocess.run([binary, "make-test-model", "--arch", "llama", "--preset", preset, "--dtype", "bf16",
                        "--out", path], check=True)
    return path
