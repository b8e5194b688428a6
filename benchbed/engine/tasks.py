"""Verifiable arithmetic tasks, the character tokenizer built locally with `tokenizers`, and the sandbox programs.

The reward is checked by CHECKER, run inside the rollout's sandbox. A randomly initialised model almost never
answers right, so the reward is graded: 0.25 for an answer that starts with a digit (format), 0.25 more when
that first digit is the answer's first digit, 1.0 for the exact answer. Groups then differ often enough to
give GRPO a signal, while some still agree (zero advantage)."""

from __future__ import annotations

import random
from dataclasses import dataclass

PAD, EOS, UNK, CALL, OBS = "<pad>", "<eos>", "<unk>", "<call>", "<obs>"
SPECIALS = (PAD, EOS, UNK, CALL, OBS)
CHARS = "0123456789+-="

# Run as `python3 -I -S -c CHECKER RESPONSE EXPECTED DELAY_S`; prints the reward as JSON.
CHECKER = """
import json, re, sys, time
response, expected, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
time.sleep(delay)
found = re.match(r"-?[0-9]+", response)
if found and found.group(0) == expected:
    reward = 1.0
else:
    reward = 0.0
    digits = response.lstrip("-")
    if digits[:1].isdigit():
        reward += 0.25
        if digits[0] == expected.lstrip("-")[0]:
            reward += 0.25
print(json.dumps({"reward": reward, "correct": reward == 1.0}))
"""

# Run as `python3 -I -S -c CALCULATOR EXPRESSION`: the tool a rollout may call; prints the value.
CALCULATOR = """
import sys
a, op, b = sys.argv[1].partition("+") if "+" in sys.argv[1] else sys.argv[1].partition("-")
print(int(a) + int(b) if op == "+" else int(a) - int(b))
"""


@dataclass(frozen=True)
class Task:
    """One prompt: `a+b=` or `a-b=`, with its expected answer as text."""

    prompt: str
    expected: str
    expression: str


def make_task(rng: random.Random) -> Task:
    a, b = rng.randint(0, 49), rng.randint(0, 49)
    op = rng.choice("+-")
    value = a + b if op == "+" else a - b
    expression = f"{a}{op}{b}"
    return Task(prompt=f"{expression}=", expected=str(value), expression=expression)


def build_tokenizer():
    """A character-level tokenizer (a WordLevel model over single characters), built in memory: no download."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    vocab = {tok: i for i, tok in enumerate([*SPECIALS, *CHARS])}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer.add_special_tokens(list(SPECIALS))
    tokenizer.decoder = decoders.Fuse()
    return tokenizer


def response_text(tokenizer, ids: list[int]) -> str:
    """The text of a response turn: characters up to the first end-of-sequence, specials left out."""
    eos = tokenizer.token_to_id(EOS)
    if eos in ids:
        ids = ids[: ids.index(eos)]
    return tokenizer.decode(ids, skip_special_tokens=True).replace(" ", "")
