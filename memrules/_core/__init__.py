"""The pure core: messages, errors, budgets, conversation structure, the
invariants and input repair, the report, and the seams' protocols and
records as plain values. It imports nothing else of memrules, does no I/O,
and needs only attrs, pyrsistent and PyYAML.
"""
