"""benchbed: a benchmarking harness for RL post-training systems (verl, slime, prime-rl, simulated)."""

__version__ = "0.1.0"
