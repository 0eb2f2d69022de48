"""pytest fixtures of the Python tests (docs/pytorch.md, "Tests").

Multi-rank cases are programs that run on every rank and print one line
per check ("rank R: ok ..." or "rank R: FAIL ..."); the `ranks` fixture
launches them the ways a trainer is launched (mpiexec.mpich, torchrun, or
plain processes that meet through the process group's store, as torchrun
starts them) with a time limit, and fails the test with the job's output
when a rank fails, exits non-zero or hangs.

The job's Python is the one running pytest (so the second tested torch is
`/usr/bin/python3 -m pytest ...`). Paths come from the environment that
ctest sets, else from the package's own lookup (gradcomm._paths):
GRADCOMM_MPIEXEC (default mpiexec.mpich), GRADCOMM_RUNTIME_LIBRARY,
GRADCOMM_BIN (the build's bin: gradcomm-compile, gradcomm-export, ...).
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# A job's own limit; ctest's TIMEOUT bounds the whole file.
JOB_TIMEOUT = 300


def tool(name):
    """The build's `name` (gradcomm-compile, ...): $GRADCOMM_BIN/name, else
    what the package finds; skips the test when there is none."""
    folder = os.environ.get("GRADCOMM_BIN")
    if folder:
        return os.path.join(folder, name)
    from gradcomm._paths import tool as find
    found = find(name, "GRADCOMM_" + name.split("-")[-1].upper())
    if not found:
        pytest.skip("%s not built" % name)
    return found


def _output_tail(output, lines=60):
    return "\n".join(output.splitlines()[-lines:])


class Ranks:
    """Runs this test's jobs and commands in its folder (fixture
    `ranks`)."""

    def __init__(self, work):
        self.work = work
        self.jobs = 0
        self.mpiexec_path = os.environ.get("GRADCOMM_MPIEXEC",
                                           "mpiexec.mpich")

    def _env(self, extra):
        self.jobs += 1
        # A fresh rendezvous file per job (file:// process groups).
        rendezvous = os.path.join(self.work, "rendezvous-%d" % self.jobs)
        env = dict(os.environ, GRADCOMM_TEST_RENDEZVOUS=rendezvous)
        for name, value in (extra or {}).items():
            if value is None:  # unset
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def _finish(self, what, rc, output, expect_ok):
        print(output)  # pytest shows it with the failure, or with -s / -rA
        failed = [line for line in output.splitlines() if "FAIL" in line]
        if rc != 0 or failed:
            pytest.fail("%s: exit %s, %d FAIL line(s)\n%s"
                        % (what, rc, len(failed), _output_tail(output)),
                        pytrace=False)
        if expect_ok and not any(" ok" in line or line.startswith("ok")
                                 for line in output.splitlines()):
            pytest.fail("%s: no check reported ok\n%s"
                        % (what, _output_tail(output)), pytrace=False)
        return output

    def _completed(self, command, env, what, timeout, cwd=None):
        """(exit status, output) of `command`; fails the test when it does
        not end within `timeout` seconds."""
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  env=env, timeout=timeout,
                                  cwd=cwd or self.work)
        except subprocess.TimeoutExpired as error:
            output = error.stdout or ""
            if isinstance(output, bytes):
                output = output.decode(errors="replace")
            pytest.fail("%s: no end within %d s\n%s"
                        % (what, timeout, _output_tail(output)),
                        pytrace=False)
        return done.returncode, done.stdout

    def _run(self, command, env, what, expect_ok, timeout, cwd=None):
        rc, output = self._completed(command, env, what, timeout, cwd)
        return self._finish(what, rc, output, expect_ok)

    def command(self, *command, env=None, timeout=JOB_TIMEOUT, cwd=None):
        """Any command (a tool of the build, ...) in the test's folder (or
        `cwd`); it must succeed. `env` adds variables, or unsets those it
        maps to None. Returns its output."""
        command = [str(part) for part in command]
        return self._run(command, self._env(env), " ".join(command), False,
                         timeout, cwd)

    def python(self, script, *args, env=None, expect_ok=False,
               timeout=JOB_TIMEOUT):
        """One process, `python script args...`; returns its output."""
        command = [sys.executable, script] + [str(arg) for arg in args]
        return self._run(command, self._env(env),
                         " ".join(command[1:]), expect_ok, timeout)

    def refused(self, expected, command, timeout=120):
        """`command` (a list) must fail and say `expected`."""
        rc, output = self._completed(command, self._env(None),
                                     "refusal expected: " + " ".join(command),
                                     timeout)
        if rc == 0 or expected not in output:
            pytest.fail("expected a refusal saying %r, got exit %d:\n%s"
                        % (expected, rc, _output_tail(output)), pytrace=False)

    def mpiexec(self, n, script, *args, env=None, expect_ok=True,
                timeout=JOB_TIMEOUT):
        """`mpiexec -n n python script args...`; returns its output."""
        command = [self.mpiexec_path, "-n", str(n), sys.executable, script]
        command += [str(arg) for arg in args]
        return self._run(command, self._env(env),
                         "mpiexec -n %d %s" % (n, " ".join(command[4:])),
                         expect_ok, timeout)

    def torchrun(self, n, script, *args, env=None, expect_ok=True,
                 timeout=JOB_TIMEOUT):
        """torchrun --standalone with n processes; returns its output."""
        command = [sys.executable, "-m", "torch.distributed.run",
                   "--standalone", "--nproc_per_node=%d" % n, script]
        command += [str(arg) for arg in args]
        return self._run(command, self._env(env),
                         "torchrun -n %d %s" % (n, " ".join(command[5:])),
                         expect_ok, timeout)

    def processes(self, n, script, *args, env=None, expect_ok=True,
                  timeout=JOB_TIMEOUT):
        """n plain processes (TEST_RANK, TEST_SIZE), as torchrun starts
        ranks but without its agent; returns their joined output."""
        shared = self._env(env)
        running = []
        for rank in range(n):
            rank_env = dict(shared, TEST_RANK=str(rank), TEST_SIZE=str(n))
            running.append(subprocess.Popen(
                [sys.executable, script] + [str(arg) for arg in args],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env=rank_env, cwd=self.work))
        outputs, rc = [], 0
        for process in running:
            try:
                output, _ = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                for other in running:
                    other.kill()
                output, _ = process.communicate()
                rc = rc or 124
            outputs.append(output)
            rc = rc or process.returncode
        return self._finish("%d processes: %s" % (n, os.path.basename(script)),
                            rc, "\n".join(outputs), expect_ok)


@pytest.fixture
def ranks(tmp_path):
    """Launches this test's multi-rank jobs (Ranks) in its own folder."""
    return Ranks(str(tmp_path))


@pytest.fixture(scope="module")
def module_ranks(tmp_path_factory):
    """A Ranks whose folder the tests of one module share (for runs that
    several tests read)."""
    return Ranks(str(tmp_path_factory.mktemp("module")))


@pytest.fixture
def tools():
    """tool(name): the build's executable `name`, or a skip."""
    return tool


@pytest.fixture
def work(tmp_path):
    """A fresh folder for the test's files (a str)."""
    return str(tmp_path)
