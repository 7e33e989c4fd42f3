"""The job's git checkout on the host: branch, checkpoints, diff and the patch gate."""
