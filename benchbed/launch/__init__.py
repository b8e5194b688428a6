"""Launchers: run a LaunchPlan somewhere and leave its artifacts in the run directory."""
