"""Counting tokens: the counters (tiktoken, the estimate, Hugging Face, the
provider's endpoint), the count rules that frame messages, and what a
pipeline remembers about the conversations it measured.
"""
