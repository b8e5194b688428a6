"""The CPU reference engine (adapter `ref`): a real GRPO run with a tiny MoE transformer, generator and trainer
processes, weights over torch.distributed, and rewards checked in benchbed's local sandboxes.

It runs as its own process tree (`python -m benchbed.engine`) and writes only its native event log; the `ref`
adapter turns that log into the canonical trace, as for any framework."""
