"""Package list for setuptools: benchbed/ as `benchbed`, and adapters/ installed as `benchbed.adapters`."""

from setuptools import find_packages, setup

packages = ["benchbed", *(f"benchbed.{p}" for p in find_packages("benchbed"))]
packages += ["benchbed.adapters", *(f"benchbed.adapters.{p}" for p in find_packages("adapters"))]

setup(packages=packages)
