"""The reward of benchbed's CPU profile of verl (reward.custom_reward_function): 1 when the response starts with
the prompt's sum, else 0. Written by benchbed (adapters/verl/cpu/)."""

from __future__ import annotations

from typing import Any


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None, **_: Any) -> float:
    return 1.0 if solution_str.strip().startswith(ground_truth) else 0.0
