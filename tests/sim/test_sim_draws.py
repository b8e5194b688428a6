"""The simulator's random streams: numbers in block order, each block drawn at the moment the next number is first
needed (the order of block draws from the one generator is part of a seed's trace)."""

from __future__ import annotations

import numpy as np

from benchbed.sim.draws import _BLOCK, Draws, KeptDraws


class CountingBlocks:
    """Blocks of consecutive integers (block k starts at k * n), counting the draws."""

    def __init__(self) -> None:
        self.drawn = 0

    def __call__(self, n: int) -> np.ndarray:
        block = np.arange(self.drawn * n, (self.drawn + 1) * n, dtype=float)
        self.drawn += 1
        return block


def test_draws_hand_out_numbers_in_order_and_draw_a_block_only_when_one_is_needed():
    blocks = CountingBlocks()
    draws = Draws(blocks)
    assert blocks.drawn == 0  # nothing drawn before the first number is asked for
    assert draws.take_one() == 0.0 and blocks.drawn == 1
    group = 5  # does not divide the block: a group straddles two blocks
    taken = [draws.take_one()]
    while len(taken) < _BLOCK - 1:
        taken += draws.take(group)
    assert taken[: _BLOCK - 1] == [float(i) for i in range(1, _BLOCK)]
    assert blocks.drawn == 2 and taken[-1] == float(len(taken))  # the straddling group drew the second block


def test_kept_draws_reserve_positions_and_read_them_back_across_blocks():
    blocks = CountingBlocks()
    kept = KeptDraws(blocks)
    firsts = [kept.reserve(6) for _ in range(_BLOCK // 6 + 2)]
    assert firsts == [6 * i for i in range(len(firsts))]
    assert blocks.drawn == 2  # drawn when a reservation first went past the drawn numbers
    straddling = firsts[_BLOCK // 6]
    assert kept.window(straddling, 6).tolist() == [float(straddling + j) for j in range(6)]
    assert kept.take_one() == float(firsts[-1] + 6)
    assert kept.all().tolist() == [float(i) for i in range(2 * _BLOCK)]
