"""I/O below every layer that needs it: the HTTP client the seams and the
provider counter talk to servers with, and checked, atomic file writes.
"""
