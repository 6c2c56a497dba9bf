"""The strategy contract, and the interpreter that runs strategies, enforces
the invariants after each one and tells its observers.
"""
