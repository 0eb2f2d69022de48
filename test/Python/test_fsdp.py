"""The sharded reduce-scatters under torchrun at 2 ranks: FSDP1's comm
hook (fsdp_hook.py: dense = FSDP's own gradients, ScaleCom's shard = the
runtime's segmented reduce-scatter) and FSDP2's custom reduce-scatter
(fsdp2_hook.py: dense = FSDP2's own bit for bit, compressed shards against
the runtime's segmented reduce-scatter with the layout the test derives,
memories per module, checkpoint and resume)."""

import os

import pytest

try:
    from torch.distributed.fsdp import fully_shard  # noqa: F401
    HAVE_FSDP2 = True
except ImportError:  # torch 1.13
    HAVE_FSDP2 = False

HERE = os.path.dirname(os.path.abspath(__file__))


def test_fsdp1_comm_hook(ranks):
    ranks.torchrun(2, os.path.join(HERE, "fsdp_hook.py"))


@pytest.mark.skipif(not HAVE_FSDP2, reason="this torch has no fully_shard")
def test_fsdp2_reduce_scatter(ranks):
    ranks.torchrun(2, os.path.join(HERE, "fsdp2_hook.py"))
