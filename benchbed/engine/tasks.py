"""Verifiable arithmetic tasks, the character tokenizer built locally with `tokenizers`, and the sandbox programs.

The reward is computed by CHECKER, run inside the rollout's sandbox. A randomly initialised model almost never
answers right, so the reward is graded: 0.25 for an answer that starts with a digit (format), 0.25 more when
that first digit is the answer's first digit, 1.0 for the exact answer. Groups then differ often enough to
give GRPO a signal, while some still agree (zero advantage)."""

from __future__ import annotations

import random
from dataclasses import dataclass

PAD, EOS, UNK, CALL, OBS = "<pad>", "<eos>", "<unk>", "<call>", "<obs>"
SPECIALS = (PAD, EOS, UNK, CALL, OBS)
CHARS = "0123456789+-="

# The checker: `/bin/sh -c CHECKER sh RESPONSE EXPECTED DELAY_S` prints the reward as JSON. A POSIX shell script
# with no external command (but `sleep` for stragglers), so a check costs a shell start, not an interpreter's.
CHECKER = r"""
response=$1 expected=$2
[ "$3" = 0 ] || sleep "$3"
case $response in
  "$expected"|"$expected"[!0-9]*) echo '{"reward": 1.0, "correct": true}'; exit 0 ;;
esac
reward=0.0
digits=${response#-}
case $digits in
  [0-9]*)
    reward=0.25
    want=${expected#-}
    [ "${digits%"${digits#?}"}" = "${want%"${want#?}"}" ] && reward=0.5 ;;
esac
echo "{\"reward\": $reward, \"correct\": false}"
"""

# The calculator tool: `/bin/sh -c CALCULATOR sh EXPRESSION` prints the value of `a+b` or `a-b`.
CALCULATOR = "echo $(($1))"


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
