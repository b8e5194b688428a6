"""TRL GRPOTrainer's generation and training schedule, as pure arithmetic (trl/trainer/grpo_trainer.py,
`_prepare_inputs`): every `training_step` call is a micro-step m; a batch of per_device_batch × steps_per_generation
samples is generated at the micro-steps m with m % (steps_per_generation × num_iterations) == 0, shuffled, and cut
into steps_per_generation slices; micro-step m trains slice m % steps_per_generation of the latest batch. An
optimizer step is gradient_accumulation_steps micro-steps, and versions count optimizer steps
(docs/reference/trace.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Schedule:
    per_device_batch: int
    steps_per_generation: int = 1
    num_iterations: int = 1
    grad_accum: int = 1

    @property
    def generation_batch(self) -> int:
        return self.per_device_batch * self.steps_per_generation

    @property
    def micro_steps_per_generation(self) -> int:
        return self.steps_per_generation * self.num_iterations

    def generation_micro_step(self, g: int) -> int:
        """The micro-step (from 0) at which batch g (from 0) is generated."""
        return g * self.micro_steps_per_generation

    def version_at(self, micro_step: int) -> int:
        """The policy version the trainer holds at a micro-step: optimizer steps finished before it."""
        return micro_step // self.grad_accum

    def generated_in_step(self, g: int) -> int:
        """The optimizer step (from 1) during which batch g is generated."""
        return self.version_at(self.generation_micro_step(g)) + 1

    def uses(self, g: int, slice_: int) -> list[int]:
        """v_train of every optimizer step that trains slice `slice_` of batch g (num_iterations of them)."""
        m0 = self.generation_micro_step(g)
        return [self.version_at(m0 + slice_ + r * self.steps_per_generation) for r in range(self.num_iterations)]

    def generations(self, steps: int) -> int:
        """Batches generated within the first `steps` optimizer steps."""
        micro = steps * self.grad_accum
        return -(-micro // self.micro_steps_per_generation)
