"""DistributedSampler against PyTorch's (shuffle=False: the same indices; shuffled: the same
shares of one permutation), in one process: it needs no process group when given its rank."""

from __future__ import annotations

import pytest

from kiln.distributed import DistributedSampler


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (2, 4, False),
                                                    (8, 2, False), (7, 4, True)])  # fmt: skip
def test_shares_match_pytorch_without_shuffle(n, replicas, drop_last):
    torch = pytest.importorskip("torch.utils.data")
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                          drop_last=drop_last)  # fmt: skip
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_shuffled_shares_partition_one_permutation_per_epoch():
    """Hand-checked properties: each epoch, the ranks' shares are disjoint and cover every
    index; set_epoch changes the permutation, the same one on every rank."""
    shares = {}
    for epoch in (0, 1):
        samplers = [DistributedSampler(range(12), 3, r, seed=5) for r in range(3)]
        for s in samplers:
            s.set_epoch(epoch)
        shares[epoch] = [list(s) for s in samplers]
        assert sorted(sum(shares[epoch], [])) == list(range(12))
    assert shares[0] != shares[1]


def test_rank_out_of_range():
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(4), num_replicas=3, rank=3)


def test_reachable_from_utils_data_as_in_pytorch():
    from kiln.distributed import DistributedSampler as from_distributed
    from kiln.utils.data import DistributedSampler

    assert DistributedSampler is from_distributed
    # torch.utils.data.DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)
    # pads to 12 indices and takes every third from position 1
    assert list(DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)) == [
        1,
        4,
        7,
        0,
    ]
