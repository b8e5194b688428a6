"""A rendered run keeps its TensorBoard event files under `tensorboard/`: the folder above it is the run."""

from benchbed.adapterkit.shared import by_folder

marks_run = by_folder("tensorboard", ".tfevents.")
