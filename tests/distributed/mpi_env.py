"""The environment the tests run ranks under mpirun with, and the processes of its ranks."""
import os
import shutil
import subprocess
import sys

SUPPRESSIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lsan_mpi.supp")


def mpi_env():
    """os.environ, with Open MPI allowed to run as root (CI runs as root) and, in a
    sanitizer build's run, LeakSanitizer told which leaks are Open MPI's own (their
    stacks need the slow unwinder to reach a library frame)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if env.get("VLLM_TEST_SANITIZED"):
        lsan = env.get("LSAN_OPTIONS", "")
        env["LSAN_OPTIONS"] = (lsan + ":" if lsan else "") + f"suppressions={SUPPRESSIONS}:fast_unwind_on_malloc=0"
        asan = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "fast_unwind_on_malloc=0"
    return env


def rank_pid(server, rank):
    """The process of `rank` among mpirun's children (Open MPI names it in each one's environment)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if parent == server.proc.pid and f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ:
            return int(pid)
    sys.exit(f"FAIL: no process of rank {rank} under mpirun")


def run_job(binary, args, ranks=None, env=None, timeout=120):
    """`binary args` (its output captured), under `mpirun --oversubscribe -np ranks` when `ranks` is
    given; one that does not end within `timeout` seconds fails the test rather than hanging CI."""
    cmd = [binary] + args
    if ranks is not None:
        cmd = [shutil.which("mpirun"), "--oversubscribe", "-np", str(ranks)] + cmd
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"FAIL: {' '.join(cmd)} did not end within {timeout} s")
