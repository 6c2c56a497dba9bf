"""The request hook: the plugin that serves a route's requests, and each
conversation's memos.
"""
