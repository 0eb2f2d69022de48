"""gradcomm.torch.ddp end to end at 1, 2 and 4 ranks: each job runs
test/Python/ddp_hook.py, which says what each case checks (hooks against
PyTorch references written there, the averagers, overlap, 16 bits,
torch.compile, bad input, save/resume, a start without mpiexec).

ctest runs one rank count per entry: `pytest test_ddp_hooks.py -k np2`."""

import os

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "ddp_hook.py")


def _ids(n):
    return "np%d" % n


@pytest.mark.parametrize("n", [1, 2, 4], ids=_ids)
def test_cases_in_one_job(ranks, n):
    # One job for the cases that need no fresh process: a Python start-up
    # per rank is about 3 s of CPU, one per case made up most of the time.
    cases = ["dense", "scalecom", "recipe", "gossip", "easgd", "overlap",
             "sixteen-bits"]
    if n > 1:
        cases.append("bad")
    if n == 2:  # torch.compile's compile time is paid once per rank
        cases.append("compile")
    ranks.mpiexec(n, SCRIPT, *cases)


# At 2 ranks only: each rank saves and loads its own state, the same code
# at any group size, and two 4-rank jobs cost a minute of CI's two cores.
@pytest.mark.parametrize("n", [2], ids=_ids)
def test_resume_gives_the_uninterrupted_bits(ranks, work, n):
    checkpoint = os.path.join(work, "checkpoint")
    os.makedirs(checkpoint)
    ranks.mpiexec(n, SCRIPT, "save", checkpoint)
    ranks.mpiexec(n, SCRIPT, "resume", checkpoint)


@pytest.mark.parametrize("n", [2, 4], ids=_ids)
def test_started_without_mpiexec(ranks, n):
    # As torchrun starts ranks: MPI comes up through the process group's
    # store, and the hooks work as under mpiexec.
    ranks.processes(n, SCRIPT, "no-mpiexec")
