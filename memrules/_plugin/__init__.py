"""The request hook: the plugin that serves a route's requests, and each
conversation's memos.
"""

from memrules._plugin import routes as routes  # attaches MemoryConfig.route and .close
