"""`generate --input` runs of a model in one process and split across ranks under mpirun, and the
comparison of their outputs: the same greedy tokens, and logprobs equal or within a relative bound."""
import json
import os
import shutil
import sys

from mpi_env import mpi_env, run_job


def skip_unless_mpirun():
    if shutil.which("mpirun") is None:
        print("SKIP: mpirun is not installed (Debian's openmpi-bin)")
        sys.exit(77)


def numpy_or_skip():
    """numpy, for the checks that write their fixtures with it; without it the check is skipped."""
    try:
        import numpy
    except ImportError:
        print("SKIP: numpy is not installed")
        sys.exit(77)
    return numpy


def logprob_values(out):
    """Every logprob a request's output holds ({token id: logprob} per position), keyed by where it is."""
    values = {}
    for pos, entry in enumerate(out.get("prompt_logprobs") or []):
        for tok, lp in (entry or {}).items():
            values[("prompt", pos, tok)] = lp
    for pos, entry in enumerate(out["outputs"][0].get("logprobs") or []):
        for tok, lp in entry.items():
            values[("sampled", pos, tok)] = lp
    return values


class ParallelRuns:
    """Runs jobs of `binary` (in mpi_env() unless `env` is given) with their files in `scratch`; what goes
    wrong is added to `failures`."""

    def __init__(self, binary, scratch, env=None, timeout=120):
        os.makedirs(scratch, exist_ok=True)
        self.binary, self.scratch, self.timeout = binary, scratch, timeout  # a hang fails
        self.env = env if env is not None else mpi_env()
        self.failures = []
        self.last_summary = ""
        self.last_stderr = ""

    def finish(self, summary):
        """Ends the check: each failure printed and exit status 1, or `summary` after "OK: "."""
        for f in self.failures:
            print("FAIL:", f)
        if self.failures:
            sys.exit(1)
        print("OK:", summary)

    def run(self, args, ranks=None):
        return run_job(self.binary, args, ranks, self.env, self.timeout)

    def generate(self, model, requests, name, tp=1, pp=1, dp=1, extra=()):
        """The output lines of `requests` greedy, on tp x pp x dp ranks of one thread (one process of two
        threads)."""
        path = f"{self.scratch}/{name}.jsonl"
        with open(path, "w") as f:
            for r in requests:
                f.write(json.dumps(r) + "\n")
        args = ["generate", "--model", model, "--input", path, "--output", f"{self.scratch}/{name}.out.jsonl",
                "--temperature", "0", *extra]
        ranks = tp * pp * dp
        if ranks > 1:
            args += ["-tp", str(tp), "-pp", str(pp), "-dp", str(dp), "--threads", "1"]
        else:
            args += ["--threads", "2"]
        p = self.run(args, ranks if ranks > 1 else None)
        self.last_stderr = p.stderr
        # generate's final line ("requests: ..."), whatever a sanitizer or mpirun prints after it
        self.last_summary = next((line for line in reversed(p.stderr.splitlines()) if line.startswith("requests: ")),
                                 "")
        if p.returncode != 0:
            self.failures.append(f"{name}: exited {p.returncode}: {p.stderr.strip()[-600:]}")
            return None
        return [json.loads(line) for line in open(f"{self.scratch}/{name}.out.jsonl")]

    def compare(self, name, want, got, tolerance):
        """Records where `got` differs from `want` (tolerance 0: bit for bit); gives the largest relative
        logprob difference."""
        largest = 0.0
        if got is None or want is None:
            return largest
        for i, (w, g) in enumerate(zip(want, got)):
            if w["outputs"][0]["token_ids"] != g["outputs"][0]["token_ids"]:
                self.failures.append(f"{name} request {i}: greedy tokens differ")
            wv, gv = logprob_values(w), logprob_values(g)
            if tolerance == 0:
                if wv != gv:
                    self.failures.append(f"{name} request {i}: logprobs differ")
                continue
            shared = wv.keys() & gv.keys()
            if len(shared) < 0.9 * len(wv):  # a near tie may swap the last of the top 5
                self.failures.append(f"{name} request {i}: top logprob tokens differ "
                                     f"({len(shared)} of {len(wv)} shared)")
            worst = max((abs(wv[k] - gv[k]) / max(1.0, abs(wv[k])) for k in shared), default=0.0)
            largest = max(largest, worst)
            if worst > tolerance:
                self.failures.append(f"{name} request {i}: logprobs differ by {worst:.2e} (relative), "
                                     f"above {tolerance}")
        return largest
