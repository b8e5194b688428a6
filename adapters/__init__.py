"""Framework adapters, installed as `benchbed.adapters` and registered in the `benchbed.adapters` entry-point group."""
