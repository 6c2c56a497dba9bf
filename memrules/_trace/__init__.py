"""Traces: what a run asked and what its seams answered, written as JSON
Lines, with the config carried in canonical form.
"""
