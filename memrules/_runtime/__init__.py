"""The pipeline: a config's strategies run with their counter and seams,
sync or awaited, logged, with a progress line for long runs.
"""
